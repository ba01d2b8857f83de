"""OpenStack Keystone (the public v3 API) for caldera's tests, served the way uwsgi serves it
in a real deployment: several worker processes, one request at a time each.

Started by scripts/keystone-standalone.sh, which writes keystone.conf, syncs the database,
sets up the fernet and credential keys and bootstraps the admin user first. Keystone is a
plain WSGI application (Flask). The parent process binds the listening socket on loopback and
forks KEYSTONE_WORKERS children; each child loads Keystone itself (no database connection
crosses a fork) and serves the shared socket with the standard library's wsgiref server, one
request at a time. No extra WSGI server is needed (uwsgi compiles C for minutes).

Why not threads: Keystone is not safe to serve from several threads of one process. With a
threaded server, under the real-Keystone suite's parallel tests, an operator's token that
Keystone itself had just described as `roles: [member, reader]` was checked moments later as
holding `admin` (another request's role), and Keystone refused to create an application
credential: `400 ... Could not find role assignment with role: <admin's id>` (3 of 6 runs).
Real deployments run it as uwsgi or mod_wsgi processes; so do we.

Usage: python keystone_standalone.py --config-file keystone.conf --bind 127.0.0.1 \
           --port 5000 [--workers 3] [--pid-file keystone.pid]
The pid file holds the parent's pid: SIGTERM to it stops every worker.
"""

import argparse
import ctypes
import faulthandler
import logging
import os
import signal
import socket
import sys
from wsgiref import simple_server

PR_SET_PDEATHSIG = 1


class QuietHandler(simple_server.WSGIRequestHandler):
    """Access log through logging (keystone.log), not stderr."""

    def log_message(self, fmt, *args):
        logging.getLogger('keystone.standalone.http').info(
            "%s %s", self.client_address[0], fmt % args)


def die_with_parent():
    """Linux: this worker gets SIGTERM when the parent dies, even by SIGKILL."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:
        os._exit(0)


def serve(listener, config_file):
    """One worker: loads Keystone and serves the shared socket, one request at a time."""
    die_with_parent()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.signal(signal.SIGINT, lambda *_: os._exit(0))
    faulthandler.register(signal.SIGUSR2, all_threads=True)
    # keystone.server.flask.core reads its configuration files from here...
    os.environ['OS_KEYSTONE_CONFIG_FILES'] = os.path.abspath(config_file)
    # ...and parses sys.argv as its own command line: leave it only the program name.
    sys.argv = sys.argv[:1]
    from keystone.server import wsgi
    app = wsgi.initialize_public_application()

    server = simple_server.WSGIServer(listener.getsockname(), QuietHandler,
                                      bind_and_activate=False)
    server.socket.close()
    server.socket = listener
    server.server_name, server.server_port = listener.getsockname()[:2]
    server.setup_environ()
    server.set_app(app)
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        os._exit(0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--config-file', required=True)
    p.add_argument('--bind', default='127.0.0.1')
    p.add_argument('--port', type=int, default=5000)
    p.add_argument('--workers', type=int,
                   default=int(os.environ.get('KEYSTONE_WORKERS', '3')))
    p.add_argument('--pid-file')
    a = p.parse_args()

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((a.bind, a.port))
    listener.listen(128)
    if a.pid_file:
        with open(a.pid_file, 'w') as f:
            f.write('%d\n' % os.getpid())

    workers = []
    for _ in range(max(1, a.workers)):
        pid = os.fork()
        if pid == 0:
            serve(listener, a.config_file)
        workers.append(pid)
    listener.close()
    print("keystone standalone: listening on http://%s:%d (%d worker processes)"
          % (a.bind, a.port, len(workers)), flush=True)

    def stop(signum, frame):
        for pid in workers:
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    # A worker that dies takes the whole Keystone down (loudly), rather than leaving fewer
    # workers serving in silence.
    status = 0
    first = True
    while workers:
        try:
            pid, code = os.wait()
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid in workers:
            workers.remove(pid)
            if first and code != 0:
                status = 1
                print("keystone standalone: worker %d ended (status %d); stopping"
                      % (pid, code), flush=True)
            first = False
            stop(None, None)
    if a.pid_file:
        try:
            os.unlink(a.pid_file)
        except OSError:
            pass
    sys.stdout.flush()
    os._exit(status)


if __name__ == '__main__':
    main()
