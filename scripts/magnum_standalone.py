"""Single-process standalone OpenStack Magnum (API + conductor) for caldera's tests.

Started by scripts/magnum-standalone.sh; not meant to be run by hand (it needs the
magnum.conf that the shell script writes). Two subcommands:

  python magnum_standalone.py fixtures KEYSTONE_URL MAGNUM_URL
      (any python3; standard library only) registers in the Keystone of
      scripts/keystone-standalone.sh what Magnum needs: service user `magnum`
      (admin of `service`), the trustee domain `magnum` with its admin
      `magnum_domain_admin`, and the `container-infra` service with RegionOne
      public and internal endpoints MAGNUM_URL/v1. Env: KEYSTONE_ADMIN_PASSWORD,
      MAGNUM_SERVICE_PASSWORD, MAGNUM_DOMAIN_ADMIN_PASSWORD.

  python magnum_standalone.py serve --config-file magnum.conf [--pid-file F]
      (Magnum's venv) the conductor and the API in this one process.

Why one process: magnum.conf uses `transport_url = fake://`, oslo.messaging's
in-memory driver, whose queues exist only inside one process (the same approach
as scripts/heat_standalone.py). Magnum 20-22 run on eventlet (magnum.cmd
monkey-patches, its RPC server uses the eventlet executor), so this does too: the
conductor's RPC server and periodic tasks (cluster status sync from Heat) run as
green threads, and the API's paste app (etc/magnum/api-paste.ini of the venv:
keystonemiddleware auth_token, pecan v1 app) is served by eventlet.wsgi.

What differs from a stock deployment, on purpose (everything else is Magnum's code):
  * Cluster driver: scripts/magnum_test_driver (a subclass of Magnum's
    k8s_fedora_coreos_v1 Heat driver with server-free templates), declared as
    `magnum.drivers` entry point caldera_test_k8s by a .dist-info this writes
    into --work-dir (see _install_test_driver); magnum.conf disables the stock
    k8s_fedora_coreos_v1, so it is the one driver for (vm, fedora-coreos,
    kubernetes).
  * Glance, Nova and Neutron do not exist here. OpenStackClients.glance/nova/
    neutron return small in-memory clients that answer the calls Magnum's API
    validators make (api/attr_validator.py, api/validation.py): one image
    (fedora-coreos-caldera, os_distro fedora-coreos), flavors m1.small/m1.medium,
    keypair caldera-key, networks public (external) and private with subnet
    private-subnet. Unknown names still fail Magnum's validation as stock does
    (ImageNotFound, FlavorNotFound, KeyPairNotFound, ...).
  * The object indirection API (magnum-api's RPC backport to the conductor) is
    not set: API and conductor share this process and its database.
"""

import sys


# ----------------------------------------------------------------- fixtures
def fixtures(argv):
    import os
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from keystone_fixtures import Keystone

    keystone_url, magnum_url = argv[0], argv[1].rstrip('/')
    ks = Keystone(keystone_url, os.environ['KEYSTONE_ADMIN_PASSWORD'])
    service = ks.find('projects', name='service', domain_id='default')
    admin = ks.find('roles', name='admin')
    magnum = ks.ensure('users', 'user',
                       {'name': 'magnum', 'domain_id': 'default',
                        'password': os.environ['MAGNUM_SERVICE_PASSWORD']},
                       name='magnum', domain_id='default')
    ks.grant(admin['id'], magnum['id'], service['id'])
    # Magnum's trustee domain: the conductor creates one user per cluster here.
    domain = ks.ensure('domains', 'domain',
                       {'name': 'magnum',
                        'description': 'Owns users and projects created by '
                                       'magnum'},
                       name='magnum')
    dadmin = ks.ensure('users', 'user',
                       {'name': 'magnum_domain_admin',
                        'domain_id': domain['id'],
                        'password': os.environ['MAGNUM_DOMAIN_ADMIN_PASSWORD']},
                       name='magnum_domain_admin', domain_id=domain['id'])
    ks.call('PUT', '/domains/%s/users/%s/roles/%s'
            % (domain['id'], dadmin['id'], admin['id']))
    svc = ks.ensure('services', 'service',
                    {'type': 'container-infra', 'name': 'magnum',
                     'description': 'Container Infrastructure Management '
                                    '(caldera test Magnum)'},
                    type='container-infra')
    existing, _ = ks.call('GET', '/endpoints?service_id=%s' % svc['id'])
    have = {(e['region_id'], e['interface']) for e in existing['endpoints']}
    for interface in ('public', 'internal'):
        if ('RegionOne', interface) not in have:
            ks.call('POST', '/endpoints', {'endpoint': {
                'service_id': svc['id'], 'region_id': 'RegionOne',
                'interface': interface, 'url': magnum_url + '/v1'}})
    print('MAGNUM_TRUSTEE_DOMAIN_ID=%s' % domain['id'])
    print('MAGNUM_SERVICE_USER_ID=%s' % magnum['id'])


# ------------------------------------------------------ in-memory OS clients
IMAGES = [{'id': '6d3cbf0c-4a3d-4a43-9d1a-5b0c2c8a0f11',
           'name': 'fedora-coreos-caldera', 'os_distro': 'fedora-coreos',
           'status': 'active'}]
FLAVORS = [('m1.small', 'c1a0e1b2-0000-4000-8000-000000000001', 20),
           ('m1.medium', 'c1a0e1b2-0000-4000-8000-000000000002', 40)]
KEYPAIRS = {'caldera-key': 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIcalderatest '
                           'caldera@test'}
NETWORKS = [{'id': '5e0f3c42-1f6e-4b8e-9a51-0a3b9f000001', 'name': 'public',
             'router:external': True},
            {'id': '5e0f3c42-1f6e-4b8e-9a51-0a3b9f000002', 'name': 'private',
             'router:external': False}]
SUBNETS = [{'id': '5e0f3c42-1f6e-4b8e-9a51-0a3b9f0000a2',
            'name': 'private-subnet', 'cidr': '10.0.0.0/16',
            'network_id': NETWORKS[1]['id']}]


def _stub_clients():
    from glanceclient import exc as glance_exc
    from novaclient import exceptions as nova_exc

    class Images(object):
        def get(self, ident):
            for i in IMAGES:
                if i['id'] == ident:
                    return dict(i)
            raise glance_exc.NotFound(ident)

        def list(self, filters=None):
            name = (filters or {}).get('name')
            return [dict(i) for i in IMAGES if name in (None, i['name'])]

    class Flavor(object):
        def __init__(self, name, id_, disk):
            self.name, self.id, self.disk = name, id_, disk

    class Flavors(object):
        def list(self, **kw):
            return [Flavor(*f) for f in FLAVORS]

    class Keypair(object):
        def __init__(self, name):
            self.name, self.id = name, name
            self.public_key = KEYPAIRS[name]

    class Keypairs(object):
        def get(self, name, user_id=None):
            if name not in KEYPAIRS:
                raise nova_exc.NotFound(404, 'Keypair %s not found' % name)
            return Keypair(name)

    class Glance(object):
        images = Images()

    class Nova(object):
        flavors = Flavors()
        keypairs = Keypairs()

    class Neutron(object):
        def list_networks(self, **filters):
            nets = NETWORKS
            if 'router:external' in filters:
                nets = [n for n in nets
                        if n['router:external'] == filters['router:external']]
            return {'networks': [dict(n) for n in nets]}

        def list_subnets(self, **filters):
            return {'subnets': [dict(s) for s in SUBNETS]}

        def show_network(self, ident):
            for n in NETWORKS:
                if ident in (n['id'], n['name']):
                    return {'network': dict(n)}
            raise Exception('network %s not found' % ident)

    return Glance(), Nova(), Neutron()


def _install_stub_clients():
    from magnum.common import clients
    glance, nova, neutron = _stub_clients()
    clients.OpenStackClients.glance = lambda self: glance
    clients.OpenStackClients.nova = lambda self: nova
    clients.OpenStackClients.neutron = lambda self: neutron


def _install_test_driver(driver_dir, work_dir):
    """Make magnum_test_driver an entry point of `magnum.drivers`.

    Magnum finds drivers by entry point twice (Driver.get_drivers through
    importlib_metadata, then stevedore's DriverManager by name), so this
    writes a minimal .dist-info declaring it into work_dir and puts work_dir
    and driver_dir on sys.path, before anything scans entry points. Nothing is
    installed into the venv. ([drivers] disabled_drivers hides Magnum's own
    k8s_fedora_coreos_v1, which provides the same cluster type.)
    """
    import os
    dist = os.path.join(work_dir, 'caldera_magnum_test_driver-1.0.dist-info')
    os.makedirs(dist, exist_ok=True)
    with open(os.path.join(dist, 'METADATA'), 'w') as f:
        f.write('Metadata-Version: 2.1\nName: caldera-magnum-test-driver\n'
                'Version: 1.0\n')
    with open(os.path.join(dist, 'entry_points.txt'), 'w') as f:
        f.write('[magnum.drivers]\n'
                'caldera_test_k8s = magnum_test_driver.driver:Driver\n')
    sys.path[:0] = [driver_dir, work_dir]


# -------------------------------------------------------------------- serve
def serve(argv):
    import eventlet
    eventlet.monkey_patch()

    import argparse
    import faulthandler
    import os
    import signal

    p = argparse.ArgumentParser(prog='magnum_standalone.py serve')
    p.add_argument('--config-file', required=True)
    p.add_argument('--pid-file')
    p.add_argument('--work-dir', required=True,
                   help='directory for the entry-point metadata')
    p.add_argument('--driver-dir',
                   default=os.path.dirname(os.path.abspath(__file__)),
                   help='directory holding the magnum_test_driver package')
    a = p.parse_args(argv)
    _install_test_driver(a.driver_dir, a.work_dir)

    from eventlet import wsgi
    from oslo_log import log as logging

    from magnum.common import service as magnum_service
    import magnum.conf

    magnum_service.prepare_service(['magnum-standalone', '--config-file',
                                    a.config_file])
    CONF = magnum.conf.CONF
    log = logging.getLogger('magnum.standalone')

    _install_stub_clients()

    from magnum.api import app as api_app
    from magnum.common import rpc_service
    from magnum.common import short_id
    from magnum.conductor.handlers import ca_conductor
    from magnum.conductor.handlers import cluster_conductor
    from magnum.conductor.handlers import conductor_listener
    from magnum.conductor.handlers import credential_conductor
    from magnum.conductor.handlers import federation_conductor
    from magnum.conductor.handlers import indirection_api
    from magnum.conductor.handlers import nodegroup_conductor

    # Conductor first, so the API's first RPC call has a listener.
    conductor_id = short_id.generate_id()
    server = rpc_service.Service.create(
        CONF.conductor.topic, conductor_id,
        [indirection_api.Handler(), cluster_conductor.Handler(),
         conductor_listener.Handler(), credential_conductor.Handler(),
         ca_conductor.Handler(), federation_conductor.Handler(),
         nodegroup_conductor.Handler()],
        binary='magnum-conductor')
    server.create_periodic_tasks()
    server.start()
    log.info("conductor %s started in-process", conductor_id)

    app = api_app.load_app()
    sock = eventlet.listen((CONF.api.host, CONF.api.port), backlog=128)

    if a.pid_file:
        with open(a.pid_file, 'w') as f:
            f.write('%d\n' % os.getpid())

    def shutdown(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    faulthandler.register(signal.SIGUSR2, all_threads=True)

    http_log = logging.getLogger('magnum.standalone.http')

    class _Log(object):
        def write(self, msg):
            http_log.info(msg.rstrip())

    print("magnum standalone: listening on http://%s:%d"
          % (CONF.api.host, CONF.api.port), flush=True)
    try:
        wsgi.server(sock, app, log=_Log(), max_size=256)
    finally:
        try:
            server._server.stop()
        except Exception:
            pass
        if a.pid_file:
            try:
                os.unlink(a.pid_file)
            except OSError:
                pass
        log.info("stopped")
        os._exit(0)


if __name__ == '__main__':
    if len(sys.argv) > 1 and sys.argv[1] == 'fixtures':
        fixtures(sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == 'serve':
        serve(sys.argv[2:])
    else:
        sys.exit(__doc__)
