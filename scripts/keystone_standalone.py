"""Single-process OpenStack Keystone (the public v3 API) for caldera's tests.

Started by scripts/keystone-standalone.sh, which writes keystone.conf, syncs the database,
sets up the fernet and credential keys and bootstraps the admin user first. Keystone is a
plain WSGI application (Flask); here a threaded wsgiref server from the standard library
serves it on loopback, one thread per request, so no extra WSGI server (uwsgi compiles C
for minutes; gunicorn forks a second process) is needed.

Usage: python keystone_standalone.py --config-file keystone.conf --bind 127.0.0.1 \
           --port 5000 [--pid-file keystone.pid]
"""

import argparse
import faulthandler
import logging
import os
import signal
import socketserver
import sys
import threading
from wsgiref import simple_server


class ThreadingWSGIServer(socketserver.ThreadingMixIn,
                          simple_server.WSGIServer):
    daemon_threads = True
    request_queue_size = 128
    allow_reuse_address = True


class QuietHandler(simple_server.WSGIRequestHandler):
    """Access log through logging (keystone.log), not stderr."""

    def log_message(self, fmt, *args):
        logging.getLogger('keystone.standalone.http').info(
            "%s %s", self.client_address[0], fmt % args)


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--config-file', required=True)
    p.add_argument('--bind', default='127.0.0.1')
    p.add_argument('--port', type=int, default=5000)
    p.add_argument('--pid-file')
    a = p.parse_args()

    # keystone.server.flask.core reads its configuration files from here.
    os.environ['OS_KEYSTONE_CONFIG_FILES'] = os.path.abspath(a.config_file)
    # ...and parses sys.argv as its own command line: leave it only the program name.
    sys.argv = sys.argv[:1]
    from keystone.server import wsgi
    app = wsgi.initialize_public_application()

    server = ThreadingWSGIServer((a.bind, a.port), QuietHandler)
    server.set_app(app)
    if a.pid_file:
        with open(a.pid_file, 'w') as f:
            f.write('%d\n' % os.getpid())

    stopping = threading.Event()

    def shutdown(signum, frame):
        if stopping.is_set():
            return
        stopping.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    faulthandler.register(signal.SIGUSR2, all_threads=True)
    print("keystone standalone: listening on http://%s:%d" % (a.bind, a.port),
          flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        server.server_close()
        if a.pid_file:
            try:
                os.unlink(a.pid_file)
            except OSError:
                pass
        sys.stdout.flush()
        os._exit(0)


if __name__ == '__main__':
    main()
