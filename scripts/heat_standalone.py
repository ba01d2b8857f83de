"""Single-process standalone OpenStack Heat (API + engine) for caldera's tests.

Started by scripts/heat-standalone.sh; not meant to be run by hand (it needs a
heat.conf that the shell script writes). Why one process: heat.conf uses
`transport_url = fake://`, oslo.messaging's in-memory driver, whose queues
exist only inside one process. So the engine service (EngineService, which
also starts the convergence WorkerService and the EngineListener) runs here,
in this process, and the Heat v1 API WSGI app (paste app `heat-api`, flavor
`noauth`) is served by a threaded wsgiref server from the same process.

Heat 27 runs on oslo.service's *threading* backend (no eventlet): every RPC
message is handled on a thread of oslo.messaging's executor pool, and every
HTTP request gets its own thread here, so concurrent requests and concurrent
stacks work.

Usage: python heat_standalone.py --config-file heat.conf --bind 127.0.0.1 \
           --port 8004 [--pid-file heat.pid]
"""

# The backend must be chosen before anything imports oslo_service.service.
from oslo_service import backend

backend.init_backend(backend.BackendType.THREADING)

import argparse  # noqa: E402
import faulthandler  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402

from oslo_config import cfg  # noqa: E402
import oslo_i18n as i18n  # noqa: E402
from oslo_log import log as logging  # noqa: E402

import standalone_http  # noqa: E402
from standalone_http import ThreadingWSGIServer  # noqa: E402

CONF = cfg.CONF


class QuietHandler(standalone_http.QuietHandler):
    logger = 'heat.standalone.http'


def _patch_leaf_trigger_delay(delay):
    """Change Stack._converge_create_or_update's pause between leaves.

    Stock Heat (heat/engine/stack.py) casts check_resource for each leaf of
    the dependency graph and then calls time.sleep(1) before the next one,
    so a ResourceGroup of N members starts its members one per second. That
    module's only other sleep is time.sleep(0), so swap its `time` module for
    a shim that maps sleep(1) to sleep(delay).
    """
    import time as real_time

    from heat.engine import stack as stack_module

    class _Time(object):
        def __getattr__(self, name):
            return getattr(real_time, name)

        @staticmethod
        def sleep(secs):
            if secs == 1:
                secs = delay
            real_time.sleep(secs)

    stack_module.time = _Time()


def _patch_idle_worker_wakeups(seconds):
    """Let idle RPC executor threads sleep longer between idle checks.

    futurist's ThreadWorker waits for work with queue.get(timeout=1) and its
    pool adds a thread on every submit until executor_thread_pool_size is
    reached, never shrinking: after a few minutes of tests this process holds
    about 2000 idle threads, each waking once a second to take the GIL only
    to wait again (measured: 6.5% of a core with nothing to do, and the
    working threads queue behind them for the GIL). The timeout only bounds
    how soon an idle thread notices its executor stopping, and on shutdown
    main() waits at most 10 s for the engine before exiting anyway.
    """
    from futurist import _thread

    _thread.ThreadWorker.MAX_IDLE_FOR = seconds


def _serialize_yaql_parsing():
    """Parse one yaql expression at a time, as Heat does under eventlet.

    heat/engine/hot/functions.py keeps one yaql parser per process
    (Yaql._parser) and yaql's parser drives one shared ply lexer
    (yaql/language/factory.py: `self.parser.parse(expression,
    lexer=self.lexer)`). Under eventlet nothing preempts a parse; on Heat
    27's threading backend two stacks validated at once feed the same lexer
    and one of them fails with `Bad expression Parse error: unexpected end
    of statement` on an expression that parses on its own (seen in CI:
    1 of 16 corpus stacks created side by side). Heat's own bug; the test
    Heat serializes the parse (evaluation stays concurrent) so that a
    corpus stack fails only for reasons of its own.
    """
    from heat.engine.hot import functions

    lock = threading.Lock()
    stock = functions.Yaql.get_yaql_parser.__func__

    def get_yaql_parser(cls):
        parser = stock(cls)

        def parse(expression):
            with lock:
                return parser(expression)
        return parse

    functions.Yaql.get_yaql_parser = classmethod(get_yaql_parser)


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--config-file', required=True)
    p.add_argument('--bind', default='127.0.0.1')
    p.add_argument('--extra-bind', action='append', default=[],
                   help='another loopback address to serve the same API on '
                        '(same port); scripts/keystone-standalone.sh '
                        'registers each as a separate catalog endpoint')
    p.add_argument('--port', type=int, default=8004)
    p.add_argument('--pid-file')
    p.add_argument('--leaf-trigger-delay', type=float, default=1.0,
                   help='seconds between triggering the leaf resources of '
                        'a convergence traversal (stock Heat: 1)')
    a = p.parse_args()

    i18n.enable_lazy()
    logging.register_options(CONF)
    from heat import version
    CONF(args=['--config-file', a.config_file], project='heat',
         prog='heat-standalone',
         version=version.version_info.version_string())
    logging.setup(CONF, 'heat')
    log = logging.getLogger('heat.standalone')

    from heat.common import config
    from heat.common import messaging
    from heat.common import profiler
    from heat.engine import template
    from heat.rpc import api as rpc_api

    config.set_config_defaults()
    messaging.setup()
    config.startup_sanity_check()
    mgr = template._get_template_extension_manager()
    if not mgr or not mgr.names():
        sys.exit("ERROR: No template format plugins registered")
    profiler.setup('heat-engine', CONF.host)

    if a.leaf_trigger_delay != 1.0:
        _patch_leaf_trigger_delay(a.leaf_trigger_delay)
        log.info("leaf trigger delay %.3f s (stock Heat: 1 s)",
                 a.leaf_trigger_delay)

    _patch_idle_worker_wakeups(30)
    _serialize_yaql_parsing()

    # Engine first, so the API's first RPC call has a listener.
    from heat.engine import service as engine_service
    # Stock start() raises [database] max_overflow to executor_thread_pool_size
    # (1000 here); keep the configured pool instead: threads that wait on a
    # resource hold no DB connection.
    engine_service.EngineService._configure_db_conn_pool_size = (
        lambda self: None)
    engine = engine_service.EngineService(CONF.host, rpc_api.ENGINE_TOPIC)
    engine.start()
    log.info("engine %s started in-process (host %s)", engine.engine_id,
             CONF.host)

    app = config.load_paste_app('heat-api')
    server = ThreadingWSGIServer((a.bind, a.port), QuietHandler)
    server.set_app(app)
    extra_servers = []
    for addr in a.extra_bind:
        extra = ThreadingWSGIServer((addr, a.port), QuietHandler)
        extra.set_app(app)
        threading.Thread(target=extra.serve_forever, kwargs={
            'poll_interval': 0.5}, daemon=True).start()
        extra_servers.append(extra)
        log.info("Heat API also listening on http://%s:%d", addr, a.port)

    if a.pid_file:
        with open(a.pid_file, 'w') as f:
            f.write('%d\n' % os.getpid())

    stopping = threading.Event()

    def shutdown(signum, frame):
        if stopping.is_set():
            return
        stopping.set()
        log.info("signal %s: shutting down", signum)
        # serve_forever() runs in this (main) thread: shut it down from
        # another one.
        for s in [server] + extra_servers:
            threading.Thread(target=s.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, shutdown)
    # `kill -USR2 <pid>` dumps every thread's stack to heat-stdout.log.
    faulthandler.register(signal.SIGUSR2, all_threads=True)
    signal.signal(signal.SIGINT, shutdown)

    log.info("Heat API listening on http://%s:%d/v1/admin", a.bind, a.port)
    print("heat standalone: listening on http://%s:%d" % (a.bind, a.port),
          flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        for s in [server] + extra_servers:
            s.server_close()
        # Stopping the engine waits for in-flight stack threads; don't let a
        # stuck one block exit forever.
        t = threading.Thread(target=engine.stop, daemon=True)
        t.start()
        t.join(10)
        if a.pid_file:
            try:
                os.unlink(a.pid_file)
            except OSError:
                pass
        log.info("stopped")
        os._exit(0)


if __name__ == '__main__':
    main()
