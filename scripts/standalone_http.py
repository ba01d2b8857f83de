"""The HTTP serving heat_standalone.py and nova_standalone.py share.

A threaded wsgiref server for a loopback test service (a thread per request, many clients
connecting at once) and a request handler that writes its access log through oslo.log (the
logger named by its `logger` attribute) instead of stderr. Imported by those scripts from
this directory (their own, first on sys.path) after they have set up their service's
threading backend.
"""

import socketserver
from wsgiref import simple_server

from oslo_log import log as logging


class ThreadingWSGIServer(socketserver.ThreadingMixIn,
                          simple_server.WSGIServer):
    daemon_threads = True
    # Loopback test server: many clients may connect at once.
    request_queue_size = 128
    allow_reuse_address = True


class QuietHandler(simple_server.WSGIRequestHandler):
    """Request handler that logs through oslo.log instead of stderr."""

    logger = 'standalone.http'

    def log_message(self, fmt, *args):
        logging.getLogger(self.logger).info(
            "%s %s", self.client_address[0], fmt % args)
