"""Single-process standalone OpenStack Nova (+ Placement) for caldera's tests.

Started by scripts/nova-standalone.sh (which writes nova.conf, placement.conf and
the paste file, and prepares the databases and cells); not meant to be run by
hand. Why one process: `transport_url = fake://` (oslo.messaging's in-memory
driver) has queues only inside one process, so nova-conductor, nova-scheduler
and one nova-compute (fake virt driver) run here as service objects, as Nova's
own functional tests run them, next to the compute API WSGI app and the
Placement WSGI app, each served by a threaded wsgiref server. Nova 34 runs on
native threads (oslo.service threading backend, no eventlet).

No Keystone: Nova 34 dropped its `noauth2` pipeline, so the API pipeline is
the stock one without `authtoken`, behind a small middleware of ours that sets
the identity headers keystonemiddleware would set: `X-Auth-Token: user:project`
picks the identity (default admin:admin; user `admin` gets role admin, anyone
else member+reader). Nova reaches Placement with an admin_token plugin (token
`admin`, Placement's noauth2 strategy accepts it).

Usage: python nova_standalone.py --config-file nova.conf \
           --placement-config placement.conf --paste api-paste.ini \
           [--bind 127.0.0.1] [--port 8774] [--placement-port 8778] \
           [--glance-port 9292] [--neutron-port 9696] [--pid-file nova.pid]
"""

import os
import sys

# Native threads, decided before anything imports eventlet or oslo.service.
os.environ.setdefault('OS_NOVA_DISABLE_EVENTLET_PATCHING', '1')
from nova import monkey_patch  # noqa: E402

monkey_patch.patch(backend='threading')

import argparse  # noqa: E402
import faulthandler  # noqa: E402
import signal  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from wsgiref import simple_server  # noqa: E402

from oslo_log import log as logging  # noqa: E402

import standalone_http  # noqa: E402
from standalone_http import ThreadingWSGIServer  # noqa: E402


class QuietHandler(standalone_http.QuietHandler):
    logger = 'nova.standalone.http'


class PlacementHandler(QuietHandler):
    logger = 'placement.standalone.http'


def identity_middleware(app):
    """Set the headers keystonemiddleware's auth_token would set."""

    def wrapped(environ, start_response):
        token = environ.get('HTTP_X_AUTH_TOKEN') or 'admin:admin'
        user, _sep, project = token.partition(':')
        project = project or user
        environ['HTTP_X_AUTH_TOKEN'] = '%s:%s' % (user, project)
        environ['HTTP_X_USER_ID'] = user
        environ['HTTP_X_USER_NAME'] = user
        environ['HTTP_X_PROJECT_ID'] = project
        environ['HTTP_X_PROJECT_NAME'] = project
        environ['HTTP_X_USER_DOMAIN_ID'] = 'default'
        environ['HTTP_X_PROJECT_DOMAIN_ID'] = 'default'
        environ['HTTP_X_ROLES'] = ('admin,member,reader' if user == 'admin'
                                   else 'member,reader')
        environ['HTTP_X_IDENTITY_STATUS'] = 'Confirmed'
        return app(environ, start_response)

    return wrapped


def placement_app(conf_file, setup_db):
    """Placement's WSGI app with its own ConfigOpts (no logging setup)."""
    from oslo_config import cfg
    from placement import conf as pconf
    from placement import db_api
    from placement import deploy

    config = cfg.ConfigOpts()
    pconf.register_opts(config)
    config([], project='placement', default_config_files=[conf_file])
    db_api.configure(config)
    if setup_db:  # placement-manage db sync
        from placement.db.sqlalchemy import migration
        migration.upgrade('head')
    return deploy.loadapp(config)


def setup_nova_db(cell0_url, cell1_url):
    """nova-manage api_db sync; cell_v2 map_cell0; cell_v2 create_cell; db sync.

    The same commands nova-manage runs, called in this process (each
    nova-manage run spends ~7 s importing Nova on this machine).
    """
    from nova.cmd import manage

    steps = (
        ('api_db sync', lambda: manage.ApiDbCommands().sync()),
        ('cell_v2 map_cell0', lambda: manage.CellV2Commands().map_cell0(
            database_connection=cell0_url)),
        ('cell_v2 create_cell', lambda: manage.CellV2Commands().create_cell(
            name='cell1', transport_url='fake://',
            database_connection=cell1_url)),
        ('db sync', lambda: manage.DbCommands().sync()),
    )
    for name, step in steps:
        rc = step()
        if rc not in (None, 0):
            raise RuntimeError('nova-manage %s returned %s' % (name, rc))


def serve(app, host, port, handler, name):
    httpd = simple_server.make_server(host, port, app,
                                      server_class=ThreadingWSGIServer,
                                      handler_class=handler)
    t = threading.Thread(target=httpd.serve_forever, name=name, daemon=True)
    t.start()
    return httpd


def main():
    try:
        run()
    except BaseException:  # noqa: B902
        # Nova's executors hold non-daemon threads: a failed start would
        # otherwise leave a process that never answers.
        logging.getLogger('nova.standalone').exception("start failed")
        sys.stdout.flush()
        os._exit(1)


def run():
    p = argparse.ArgumentParser()
    p.add_argument('--config-file', required=True)
    p.add_argument('--placement-config', required=True)
    p.add_argument('--paste', required=True)
    p.add_argument('--bind', default='127.0.0.1')
    p.add_argument('--port', type=int, default=8774)
    p.add_argument('--placement-port', type=int, default=8778)
    p.add_argument('--glance-port', type=int, default=9292)
    p.add_argument('--neutron-port', type=int, default=9696)
    p.add_argument('--pid-file')
    p.add_argument('--setup-db', nargs=2, metavar=('CELL0_URL', 'CELL1_URL'),
                   help='first create the schemas (empty databases) and the '
                        'cells, as placement-manage db sync and nova-manage '
                        'would')
    a = p.parse_args()
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    t0 = time.monotonic()

    import nova.conf
    from nova import config
    from nova import objects

    CONF = nova.conf.CONF
    config.parse_args(['nova-standalone', '--config-file', a.config_file])
    logging.setup(CONF, 'nova')
    log = logging.getLogger('nova.standalone')
    objects.register_all()
    from oslo_service import _options as service_opts
    CONF.register_opts(service_opts.service_opts)
    objects.Service.enable_min_version_cache()

    if a.setup_db:
        setup_nova_db(*a.setup_db)
        log.info("nova databases and cells set up (%.1f s)",
                 time.monotonic() - t0)

    import nova_standins
    # Nova loads `compute_driver` as nova.virt.<name>: ours is registered as
    # nova.virt.caldera_fake (nova.conf: caldera_fake.CalderaFakeDriver).
    import nova_fake_driver
    sys.modules['nova.virt.caldera_fake'] = nova_fake_driver
    httpds = list(nova_standins.start(a.bind, a.glance_port, a.neutron_port))
    httpds.append(serve(placement_app(a.placement_config,
                                      bool(a.setup_db)), a.bind,
                        a.placement_port, PlacementHandler, 'placement'))
    log.info("stand-in Glance :%d, stand-in Neutron :%d, Placement :%d",
             a.glance_port, a.neutron_port, a.placement_port)

    from nova.compute import rpcapi as compute_rpcapi
    from nova.conductor import rpcapi as conductor_rpcapi
    from nova import context
    from nova.objects import host_mapping
    from nova.scheduler import rpcapi as scheduler_rpcapi
    from nova import service

    services = []
    for binary, topic, extra in (
            ('nova-conductor', conductor_rpcapi.RPC_TOPIC, {}),
            ('nova-scheduler', scheduler_rpcapi.RPC_TOPIC, {}),
            ('nova-compute', compute_rpcapi.RPC_TOPIC,
             {'topic_alt': compute_rpcapi.RPC_TOPIC_ALT})):
        svc = service.Service.create(binary=binary, topic=topic, **extra)
        svc.start()
        services.append(svc)
        log.info("%s started (%.1f s)", binary, time.monotonic() - t0)

    # nova-manage cell_v2 discover_hosts, in-process: map the compute host
    # to cell1 so the scheduler can place servers on it.
    ctxt = context.get_admin_context()
    for m in host_mapping.discover_hosts(ctxt, by_service=True):
        log.info("mapped host %s to cell %s", m.host, m.cell_mapping.name)

    from nova.api.openstack import wsgi_app
    from paste import deploy
    wsgi_app._setup_service(CONF.host, 'osapi_compute')
    app = identity_middleware(
        deploy.loadapp('config:%s' % a.paste, name='osapi_compute'))
    httpds.append(serve(app, a.bind, a.port, QuietHandler, 'osapi_compute'))
    log.info("Nova API on http://%s:%d (ready in %.1f s)", a.bind, a.port,
             time.monotonic() - t0)
    if a.pid_file:
        with open(a.pid_file, 'w') as f:
            f.write(str(os.getpid()))

    done = threading.Event()

    def on_signal(signum, frame):
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    while not done.wait(1):
        pass
    log.info("stopping")
    for h in httpds:
        h.shutdown()
    stopper = threading.Thread(
        target=lambda: [s.stop() for s in reversed(services)], daemon=True)
    stopper.start()
    stopper.join(10)
    logging.getLogger('nova.standalone').info("stopped")
    os._exit(0)


if __name__ == '__main__':
    sys.exit(main())
