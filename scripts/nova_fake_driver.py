"""Nova's own fake virt driver, with one spawn failure on request (caldera's code).

`compute_driver = caldera_fake.CalderaFakeDriver`: Nova loads the driver as
`nova.virt.<compute_driver>`, so scripts/nova_standalone.py registers this
module as `nova.virt.caldera_fake`. It is nova.virt.fake.MediumFakeDriver
(10 vCPUs, 8 GiB, 1 TB per node; no real machines, no image download) except
that spawn fails when the server asks for it:
  - server metadata key `caldera_fail_spawn` (its value becomes the message), or
  - a server name containing `fail-spawn`.
The failure is an ordinary exception from spawn, so Nova's compute manager
treats it as a real hypervisor failure: it reschedules, and with
`[scheduler] max_attempts = 1` the conductor puts the server in ERROR with a
fault ("Exceeded maximum number of retries ... Last exception: ...").
"""

from nova.virt import fake


class CalderaSpawnFailure(Exception):
    pass


class CalderaFakeDriver(fake.MediumFakeDriver):
    def spawn(self, context, instance, image_meta, injected_files,
              admin_password, allocations, network_info=None,
              block_device_info=None, power_on=True, accel_info=None):
        meta = {}
        try:
            meta = dict(instance.metadata or {})
        except Exception:  # metadata not loaded: only the name then
            pass
        if 'caldera_fail_spawn' in meta or 'fail-spawn' in (
                instance.display_name or ''):
            raise CalderaSpawnFailure(
                meta.get('caldera_fail_spawn') or
                'caldera fake driver: spawn failed as asked (%s)' %
                instance.display_name)
        return super().spawn(context, instance, image_meta, injected_files,
                             admin_password, allocations,
                             network_info=network_info,
                             block_device_info=block_device_info,
                             power_on=power_on, accel_info=accel_info)
