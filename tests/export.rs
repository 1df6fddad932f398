//! Acceptance 6: a slot's memory exported as OPAQUE_FD and imported into a second Vulkan device
//! (lavapipe) holds what the first device wrote; no fd is leaked on the way.

use std::sync::Arc;
use vkhip::compute::fd::ImportFd;
use vkhip::vk::device::{enumerate, Context};
use vkhip::vk::external::{ImportedBuffer, Slot, SlotMemory};
use vkhip::vk::instance::Instance;
use vkhip::vk::memory::HostBuffer;

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").expect("/proc/self/fd").count()
}

#[test]
fn exported_slot_reads_back_on_a_second_device_without_fd_leaks() {
    let instance = Arc::new(Instance::new(false, &[]).expect("Vulkan instance"));
    let devices = enumerate(&instance).expect("devices");
    let pd =
        devices.iter().find(|d| d.usable() && d.memory_export).expect("a device that exports memory").clone();
    let a = Context::new(instance.clone(), pd.clone(), false).expect("device A");
    let b = Context::new(instance.clone(), pd, false).expect("device B");

    // Warm-up round so lazily opened driver files do not count as leaks.
    for round in 0..2 {
        let before = open_fds();
        {
            let n = 4096usize;
            let values: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin() + round as f32).collect();
            let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
            let slot =
                Slot::new(&a, bytes.len() as u64, SlotMemory::DeviceLocal, true).expect("exportable slot");
            a.one_shot(&[], |cmd| {
                // SAFETY: recording into A's one-shot buffer; 16 KiB ≤ vkCmdUpdateBuffer's 64 KiB.
                unsafe { a.device.cmd_update_buffer(cmd, slot.buffer, 0, &bytes) };
            })
            .expect("device A writes the slot");

            let fd = slot.export_fd().expect("vkGetMemoryFdKHR");
            let imported = ImportedBuffer::import(
                &b,
                ImportFd::new(fd),
                slot.allocation_size,
                slot.size,
                slot.memory_type,
                slot.dedicated,
            )
            .expect("device B imports the fd");
            let host = HostBuffer::new(&b, slot.size, ash::vk::BufferUsageFlags::TRANSFER_DST).unwrap();
            b.one_shot(&[], |cmd| {
                let region = ash::vk::BufferCopy { src_offset: 0, dst_offset: 0, size: slot.size };
                // SAFETY: recording into B's one-shot buffer; both buffers are B's and large enough.
                unsafe { b.device.cmd_copy_buffer(cmd, imported.buffer, host.buffer, &[region]) };
            })
            .expect("device B reads the imported buffer");
            assert_eq!(
                host.floats(),
                &values[..],
                "device B must read exactly what device A wrote (round {round})"
            );
            drop(imported);
            drop(slot);
        }
        let after = open_fds();
        if round == 1 {
            assert_eq!(before, after, "open fds before/after export + import + teardown");
        }
    }
}
