"""caldera's server-free Magnum cluster driver (for scripts/magnum_standalone.py).

A subclass of Magnum's own Heat driver `k8s_fedora_coreos_v1` (from the installed
PyPI package, magnum 20-22) that keeps its Python behaviour -- parameter and output
mappings, HeatPoller status sync, update/resize/delete through Heat -- but hands
Heat caldera's own small template (templates/kubecluster.yaml) in which masters and
minions are OS::Heat::TestResource members of the `kube_masters` / `kube_minions`
ResourceGroups, so a cluster reaches CREATE_COMPLETE with no Nova, Neutron or Glance.
"""
