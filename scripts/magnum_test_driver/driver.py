"""The driver class; scripts/magnum_standalone.py registers it in place of the
`magnum.drivers` entry points (it is not installed as a distribution)."""

from magnum.drivers.k8s_fedora_coreos_v1 import driver as fcos_driver

from magnum_test_driver import template_def

ENTRY_POINT_NAME = 'caldera_test_k8s'


class Driver(fcos_driver.Driver):
    """k8s_fedora_coreos_v1 with server-free templates."""

    @property
    def provides(self):
        return [{'server_type': 'vm', 'os': 'fedora-coreos',
                 'coe': 'kubernetes'}]

    def get_template_definition(self):
        return template_def.ServerFreeK8sTemplateDefinition()

    def pre_delete_cluster(self, context, cluster):
        # Stock: deletes Octavia load balancers of the cluster's services
        # when the catalog has a load-balancer endpoint; there is none here.
        pass
