"""Stand-in Glance and Neutron for scripts/nova_standalone.py (caldera's own code).

A real Nova checks a server's image in Glance (`GET /v2/images/{id}`, and
python-glanceclient first reads the image schema `GET /v2/schemas/image`) and
asks Neutron for the ports of a server it deletes or fails to build
(`GET /v2.0/ports?device_id=...`), even when the server was booted with
`"networks": "none"` (microversion >= 2.37), which is how servers are booted
here. These two tiny HTTP services answer exactly those calls, and no more:

Glance (default 127.0.0.1:9292):
  GET /                      versions (v2.x CURRENT)
  GET /v2/schemas/image      a permissive image schema
  GET /v2/images             the images below, {"images": [...]}, filtered by
                             ?field=value on top-level fields (?name=...)
  GET /v2/images/{id}        one image, 404 for any other id
  POST /v2/images            register an image (JSON body: id?, name?, any
                             string properties); status is `active` at once
  DELETE /v2/images/{id}     forget it
  The images are the ones in IMAGES below plus those POSTed; there is no data
  (Nova's fake virt driver never downloads an image).

Neutron (default 127.0.0.1:9696):
  GET /                      versions;  GET /v2.0/extensions  -> no extensions
  GET /v2.0/ports, /v2.0/networks, /v2.0/subnets, /v2.0/security-groups,
  /v2.0/floatingips          -> empty lists (nothing is ever allocated)
  anything else              -> 404 (logged, so a call Nova makes that is not
                             answered here shows in nova.log)
"""

import json
import logging
import socketserver
import threading
import urllib.parse
import uuid
from wsgiref import simple_server

LOG = logging.getLogger('caldera.nova.standins')

# Fixed image ids so tests and templates can name them.
IMAGES = [
    {'id': '2b4c6a7e-9d1f-4c3b-8a5e-0f6d7c8b9a01', 'name': 'caldera-image-a'},
    {'id': '2b4c6a7e-9d1f-4c3b-8a5e-0f6d7c8b9a02', 'name': 'caldera-image-b'},
]


def _image(body):
    img = {
        'status': 'active', 'visibility': 'public', 'protected': False,
        'disk_format': 'qcow2', 'container_format': 'bare',
        'min_disk': 0, 'min_ram': 0, 'size': 1048576, 'virtual_size': None,
        'checksum': None, 'os_hash_algo': None, 'os_hash_value': None,
        'owner': 'admin', 'tags': [],
        'created_at': '2026-01-01T00:00:00Z',
        'updated_at': '2026-01-01T00:00:00Z',
    }
    img.update(body)
    img.setdefault('id', str(uuid.uuid4()))
    img.setdefault('name', img['id'])
    img['self'] = '/v2/images/%s' % img['id']
    img['file'] = '/v2/images/%s/file' % img['id']
    img['schema'] = '/v2/schemas/image'
    return img


IMAGE_SCHEMA = {
    'name': 'image',
    'additionalProperties': {'type': 'string'},
    'properties': {
        'id': {'type': 'string'},
        'name': {'type': ['null', 'string']},
        'status': {'type': 'string'},
        'visibility': {'type': 'string'},
        'protected': {'type': 'boolean'},
        'tags': {'type': 'array', 'items': {'type': 'string'}},
        'size': {'type': ['null', 'integer']},
        'virtual_size': {'type': ['null', 'integer']},
        'min_disk': {'type': 'integer'},
        'min_ram': {'type': 'integer'},
        'disk_format': {'type': ['null', 'string']},
        'container_format': {'type': ['null', 'string']},
        'checksum': {'type': ['null', 'string']},
        'os_hash_algo': {'type': ['null', 'string']},
        'os_hash_value': {'type': ['null', 'string']},
        'owner': {'type': ['null', 'string']},
        'created_at': {'type': 'string'},
        'updated_at': {'type': 'string'},
        'self': {'type': 'string'},
        'file': {'type': 'string'},
        'schema': {'type': 'string'},
    },
}


def _reply(start_response, status, body=None):
    data = b'' if body is None else json.dumps(body).encode()
    start_response(status, [('Content-Type', 'application/json'),
                            ('Content-Length', str(len(data)))])
    return [data]


class Glance(object):
    def __init__(self, base):
        self.base = base
        self.lock = threading.Lock()
        self.images = {i['id']: _image(dict(i)) for i in IMAGES}

    def __call__(self, environ, start_response):
        method = environ['REQUEST_METHOD']
        path = environ.get('PATH_INFO', '/').rstrip('/') or '/'
        parts = path.strip('/').split('/')
        if path == '/' or path == '/versions':
            return _reply(start_response, '300 Multiple Choices', {'versions': [
                {'id': 'v2.16', 'status': 'CURRENT',
                 'links': [{'rel': 'self', 'href': self.base + '/v2/'}]}]})
        if path == '/v2/schemas/image':
            return _reply(start_response, '200 OK', IMAGE_SCHEMA)
        if parts[:2] == ['v2', 'images']:
            with self.lock:
                if len(parts) == 2 and method == 'GET':
                    # filters on top-level fields (?name=..., ?status=...)
                    # as python-glanceclient sends them to find by name
                    query = urllib.parse.parse_qsl(
                        environ.get('QUERY_STRING', ''))
                    wanted = [(k, v) for k, v in query
                              if k not in ('limit', 'marker', 'sort',
                                           'sort_key', 'sort_dir')]
                    return _reply(start_response, '200 OK', {
                        'images': [i for i in self.images.values()
                                   if all(str(i.get(k)) == v
                                          for k, v in wanted)],
                        'schema': '/v2/schemas/images',
                        'first': '/v2/images'})
                if len(parts) == 2 and method == 'POST':
                    n = int(environ.get('CONTENT_LENGTH') or 0)
                    body = json.loads(environ['wsgi.input'].read(n) or b'{}')
                    img = _image(body)
                    self.images[img['id']] = img
                    return _reply(start_response, '201 Created', img)
                if len(parts) == 3 and parts[2] in self.images:
                    if method == 'GET':
                        return _reply(start_response, '200 OK',
                                      self.images[parts[2]])
                    if method == 'DELETE':
                        del self.images[parts[2]]
                        return _reply(start_response, '204 No Content')
        LOG.warning('stand-in Glance: no answer for %s %s', method, path)
        return _reply(start_response, '404 Not Found', {
            'message': 'not found (caldera stand-in Glance)'})


class Neutron(object):
    LISTS = {'ports', 'networks', 'subnets', 'security-groups',
             'floatingips', 'extensions', 'trunks'}

    def __init__(self, base):
        self.base = base

    def __call__(self, environ, start_response):
        method = environ['REQUEST_METHOD']
        path = environ.get('PATH_INFO', '/').rstrip('/') or '/'
        if path.endswith('.json'):
            path = path[:-5]
        parts = path.strip('/').split('/')
        if path == '/':
            return _reply(start_response, '200 OK', {'versions': [
                {'id': 'v2.0', 'status': 'CURRENT',
                 'links': [{'rel': 'self', 'href': self.base + '/v2.0/'}]}]})
        if (method == 'GET' and len(parts) == 2 and parts[0] == 'v2.0'
                and parts[1] in self.LISTS):
            return _reply(start_response, '200 OK',
                          {parts[1].replace('-', '_'): []})
        LOG.warning('stand-in Neutron: no answer for %s %s?%s', method, path,
                    environ.get('QUERY_STRING', ''))
        return _reply(start_response, '404 Not Found', {'NeutronError': {
            'type': 'HTTPNotFound', 'detail': '',
            'message': 'not found (caldera stand-in Neutron)'}})


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64


class _Quiet(simple_server.WSGIRequestHandler):
    def log_message(self, fmt, *args):
        LOG.debug('%s %s', self.client_address[0], fmt % args)


def serve(app, host, port, name):
    httpd = simple_server.make_server(host, port, app, server_class=_Server,
                                      handler_class=_Quiet)
    t = threading.Thread(target=httpd.serve_forever, name=name, daemon=True)
    t.start()
    return httpd


def start(host, glance_port, neutron_port):
    g = serve(Glance('http://%s:%d' % (host, glance_port)), host, glance_port,
              'standin-glance')
    n = serve(Neutron('http://%s:%d' % (host, neutron_port)), host,
              neutron_port, 'standin-neutron')
    return g, n
