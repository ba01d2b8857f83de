"""Template definition: Magnum's FCOS Kubernetes mappings, caldera's template.

Everything Magnum maps from the cluster / cluster template / nodegroups onto Heat
parameters is computed by Magnum's own classes, except the lookups that need Nova,
Neutron, Cinder, Octavia or an etcd discovery service (ssh key, network names, volume
types, discovery URL): get_params() starts from the generic TemplateDefinition
mapping, adds the trustee / auth parameters the stock Base definition adds, and
passes only the parameters the template declares (Heat rejects unknown ones).
"""

import os

import yaml

from magnum.drivers.heat import template_def as heat_template_def
from magnum.drivers.k8s_fedora_coreos_v1 import template_def as fcos_def

TEMPLATE = os.path.join(os.path.dirname(os.path.realpath(__file__)),
                        'templates', 'kubecluster.yaml')


def _declared_parameters():
    with open(TEMPLATE) as f:
        return set((yaml.safe_load(f) or {}).get('parameters', {}))


class ServerFreeK8sTemplateDefinition(fcos_def.FCOSK8sTemplateDefinition):

    @property
    def driver_module_path(self):
        return __name__[:__name__.rindex('.')]

    @property
    def template_path(self):
        return TEMPLATE

    def get_env_files(self, cluster_template, cluster, nodegroup=None):
        return []

    def get_params(self, context, cluster_template, cluster, **kwargs):
        osc = self.get_osc(context)
        nodegroups = kwargs.pop('nodegroups', None)
        self.add_nodegroup_params(cluster, nodegroups=nodegroups)
        extra = kwargs.pop('extra_params', {})
        extra['trustee_domain_id'] = osc.keystone().trustee_domain_id
        extra['trustee_user_id'] = cluster.trustee_user_id
        extra['trustee_username'] = cluster.trustee_username
        extra['trustee_password'] = cluster.trustee_password
        extra['trust_id'] = cluster.trust_id or ''
        auth_url = osc.url_for(service_type='identity', interface='public',
                               version=3).rstrip('/')
        extra['auth_url'] = auth_url if auth_url.endswith('/v3') \
            else auth_url + '/v3'
        try:
            extra['magnum_url'] = osc.magnum_url()
        except Exception:  # no container-infra endpoint: not fatal here
            extra['magnum_url'] = ''
        # caldera's knob for tests that act while Heat works: how long each node takes to
        # "boot", from the cluster's label (the template's default otherwise).
        seconds = (cluster.labels or {}).get('caldera_node_create_seconds')
        if seconds:
            extra['node_create_seconds'] = int(seconds)
        params = heat_template_def.TemplateDefinition.get_params(
            self, context, cluster_template, cluster, extra_params=extra)
        declared = _declared_parameters()
        return {k: v for k, v in params.items()
                if k in declared and v is not None}
