"""Creates the users, projects, regions and catalog caldera's Keystone tests expect.

Run by scripts/keystone-standalone.sh after `keystone-manage bootstrap`, through the real
Keystone v3 API (standard library only). Idempotent: what exists is reused.

    python keystone_fixtures.py KEYSTONE_URL HEAT_PORT

Environment: KEYSTONE_ADMIN_PASSWORD, KEYSTONE_OPERATOR_PASSWORD, HEAT_SERVICE_PASSWORD.

What it makes (tests/real_keystone/ relies on these names):
  domain   caldera-ops                       (besides `default`)
  projects ops (in caldera-ops), ops (in default: same name, other domain), service (default)
  users    operator   (caldera-ops) member of both `ops` projects
           disabled-operator (caldera-ops, enabled=false) member of caldera-ops/ops
           heat       (default) admin of `service`: Heat's service user and trustee
  regions  RegionOne (bootstrap), RegionTwo, RegionThree (no orchestration endpoint)
  catalog  orchestration `heat`, one Heat process on four loopback addresses:
             RegionOne public   http://127.0.0.1:HEAT_PORT/v1/%(tenant_id)s
             RegionOne internal http://127.0.0.2:HEAT_PORT/v1/%(tenant_id)s
             RegionTwo public   http://127.0.0.3:HEAT_PORT/v1/%(tenant_id)s
             RegionTwo internal http://127.0.0.4:HEAT_PORT/v1/%(tenant_id)s
Prints KEY=VALUE lines (ids) on stdout.
"""

import json
import os
import sys
import urllib.error
import urllib.request


class Keystone:
    def __init__(self, url, password):
        self.url = url.rstrip('/') + '/v3'
        self.password = password
        self.login()

    def login(self):
        # The suite runs Keystone with tokens that live a few seconds: log in again on 401.
        password = self.password
        body = {"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": "admin", "domain": {"id": "default"},
                "password": password}}},
            "scope": {"project": {"name": "admin",
                                  "domain": {"id": "default"}}}}}
        _, headers = self.call('POST', '/auth/tokens', body, auth=False)
        self.token = headers['X-Subject-Token']

    def call(self, method, path, body=None, auth=True, retry=True):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data,
                                     method=method)
        req.add_header('Content-Type', 'application/json')
        if auth:
            req.add_header('X-Auth-Token', self.token)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                text = resp.read().decode()
                return (json.loads(text) if text else {}), resp.headers
        except urllib.error.HTTPError as e:
            if e.code == 401 and auth and retry:
                self.login()
                return self.call(method, path, body, auth, retry=False)
            sys.exit('keystone_fixtures: %s %s: HTTP %d: %s'
                     % (method, path, e.code, e.read().decode()[:500]))

    def find(self, collection, **query):
        qs = '&'.join('%s=%s' % kv for kv in query.items())
        found, _ = self.call('GET', '/%s?%s' % (collection, qs))
        items = found[collection]
        return items[0] if items else None

    def ensure(self, collection, singular, body, **query):
        item = self.find(collection, **query)
        if item is None:
            created, _ = self.call('POST', '/' + collection, {singular: body})
            item = created[singular]
        return item

    def grant(self, role_id, user_id, project_id):
        self.call('PUT', '/projects/%s/users/%s/roles/%s'
                  % (project_id, user_id, role_id))


def main():
    keystone_url, heat_port = sys.argv[1], sys.argv[2]
    ks = Keystone(keystone_url, os.environ['KEYSTONE_ADMIN_PASSWORD'])
    op_pw = os.environ['KEYSTONE_OPERATOR_PASSWORD']
    heat_pw = os.environ['HEAT_SERVICE_PASSWORD']

    ops_domain = ks.ensure('domains', 'domain',
                           {'name': 'caldera-ops',
                            'description': 'caldera test operators'},
                           name='caldera-ops')
    ops = ks.ensure('projects', 'project',
                    {'name': 'ops', 'domain_id': ops_domain['id']},
                    name='ops', domain_id=ops_domain['id'])
    ops_default = ks.ensure('projects', 'project',
                            {'name': 'ops', 'domain_id': 'default'},
                            name='ops', domain_id='default')
    service = ks.ensure('projects', 'project',
                        {'name': 'service', 'domain_id': 'default'},
                        name='service', domain_id='default')
    member = ks.find('roles', name='member')
    admin = ks.find('roles', name='admin')

    operator = ks.ensure('users', 'user',
                         {'name': 'operator', 'domain_id': ops_domain['id'],
                          'password': op_pw},
                         name='operator', domain_id=ops_domain['id'])
    disabled = ks.ensure('users', 'user',
                         {'name': 'disabled-operator',
                          'domain_id': ops_domain['id'],
                          'password': op_pw, 'enabled': False},
                         name='disabled-operator',
                         domain_id=ops_domain['id'])
    heat = ks.ensure('users', 'user',
                     {'name': 'heat', 'domain_id': 'default',
                      'password': heat_pw},
                     name='heat', domain_id='default')
    ks.grant(member['id'], operator['id'], ops['id'])
    ks.grant(member['id'], operator['id'], ops_default['id'])
    ks.grant(member['id'], disabled['id'], ops['id'])
    ks.grant(admin['id'], heat['id'], service['id'])

    for region in ('RegionTwo', 'RegionThree'):
        found, _ = ks.call('GET', '/regions')
        if region not in [r['id'] for r in found['regions']]:
            ks.call('POST', '/regions', {'region': {'id': region}})

    svc = ks.ensure('services', 'service',
                    {'type': 'orchestration', 'name': 'heat',
                     'description': 'Orchestration (caldera test Heat)'},
                    type='orchestration')
    existing, _ = ks.call('GET', '/endpoints?service_id=%s' % svc['id'])
    have = {(e['region_id'], e['interface']) for e in existing['endpoints']}
    for region, interface, addr in [('RegionOne', 'public', '127.0.0.1'),
                                    ('RegionOne', 'internal', '127.0.0.2'),
                                    ('RegionTwo', 'public', '127.0.0.3'),
                                    ('RegionTwo', 'internal', '127.0.0.4')]:
        if (region, interface) in have:
            continue
        ks.call('POST', '/endpoints', {'endpoint': {
            'service_id': svc['id'], 'region_id': region,
            'interface': interface,
            'url': 'http://%s:%s/v1/%%(tenant_id)s' % (addr, heat_port)}})

    print('KEYSTONE_OPS_DOMAIN_ID=%s' % ops_domain['id'])
    print('KEYSTONE_OPS_PROJECT_ID=%s' % ops['id'])
    print('KEYSTONE_OPS_DEFAULT_PROJECT_ID=%s' % ops_default['id'])
    print('KEYSTONE_OPERATOR_ID=%s' % operator['id'])


if __name__ == '__main__':
    main()
