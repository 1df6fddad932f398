//! Exported memory imported by a second Vulkan device, with the process' open fds counted: in a
//! test binary of its own, since other tests running in parallel open fds too.

use ash::vk;
use vkhip_interop::vulkan::{Device, Importer};

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").expect("/proc/self/fd").count()
}

/// A buffer exported by one device and imported by a second (two logical devices of one GPU, as
/// two processes would have) holds what the first wrote; no fd is leaked on the way.
#[test]
fn exported_buffer_reads_back_on_a_second_device_without_fd_leaks() {
    let a = Device::open(&[], Importer::Hip).expect("device A");
    let b = Device::open(&[a.uuid()], Importer::Hip).expect("device B");
    // A warm-up round, so that lazily opened driver files do not count as leaks.
    for round in 0..2u8 {
        let before = open_fds();
        {
            let values: Vec<f32> = (0..4096).map(|i| (i as f32 * 0.37).sin() + f32::from(round)).collect();
            let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
            let shared = a.shared_buffer(bytes.len() as u64).expect("exportable buffer");
            a.submit_one_shot(&[], &[], |cmd| {
                // SAFETY: recording on A; 16 KiB ≤ vkCmdUpdateBuffer's 64 KiB.
                unsafe { a.ash().cmd_update_buffer(cmd, shared.buffer(), 0, &bytes) };
            })
            .expect("A writes the buffer");
            let imported = b.import_buffer(shared.export().expect("export")).expect("B imports the fd");
            let copy = b.shared_buffer(imported.size()).expect("B's own buffer");
            b.submit_one_shot(&[], &[], |cmd| {
                let region = vk::BufferCopy { src_offset: 0, dst_offset: 0, size: imported.size() };
                // SAFETY: recording on B; both buffers are B's and large enough.
                unsafe { b.ash().cmd_copy_buffer(cmd, imported.buffer(), copy.buffer(), &[region]) };
            })
            .expect("B copies the imported buffer");
            let got = b.read_buffer(&copy, None, None).expect("read back");
            assert_eq!(got, bytes, "B must read exactly what A wrote (round {round})");
        }
        if round == 1 {
            assert_eq!(before, open_fds(), "open fds before and after export, import and teardown");
        }
    }
}
