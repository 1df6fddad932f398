//! Issue 26, item 7: the crate's buffer, fd and submission API given what a hostile or careless
//! caller gives it, on whatever Vulkan device the machine has (lavapipe in CI: it exports memory,
//! no semaphores). Each ends in an error naming the problem: no abort, no double close, no
//! command on another device's object.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use vkhip_interop::vulkan::{Device, Importer};
use vkhip_interop::{ErrorKind, ExportedMemory, ImportFd, Limit};

/// Whether this process holds a descriptor of `path` (judged by what each fd links to, so other
/// tests opening files on other threads cannot answer for it).
fn holds(path: &Path) -> bool {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .any(|target| target == path)
}

fn unique_file(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("vkhip-interop-hostile-{}-{name}", std::process::id()));
    std::fs::write(&p, [0u8; 4096]).unwrap();
    p
}

/// Before: lavapipe closes the fd of an import it refuses, and the crate closed it again: a debug
/// build aborted ("IO Safety violation: owned file descriptor already closed"), a release build
/// closed whatever descriptor had reused the number.
#[test]
fn an_fd_the_driver_refuses_is_closed_once_and_not_leaked() {
    let device = Device::open(&[], Importer::Hip).expect("a device that exports memory (lavapipe does)");
    for name in ["plain-file", "another-file"] {
        let path = unique_file(name);
        let fd: OwnedFd = std::fs::File::open(&path).unwrap().into();
        let memory =
            ExportedMemory { fd: ImportFd::new(fd), allocation_size: 4096, size: 4096, dedicated: false };
        let e = device.import_buffer(memory).err().expect("not an exported allocation");
        assert!(e.to_string().contains("vkAllocateMemory (import OPAQUE_FD)"), "{e}");
        assert!(!holds(&path), "the refused fd of {} is still open", path.display());
        std::fs::remove_file(&path).unwrap();
    }
    // The device still works after the refusals.
    let buffer = device.shared_buffer(4096).expect("buffer");
    let imported = device.import_buffer(buffer.export().expect("export")).expect("a real export imports");
    assert_eq!(imported.size(), 4096);
}

/// Before: a read-back on device B of a buffer made on device A submitted it (reading another
/// device's object: undefined behaviour, "worked" on lavapipe).
#[test]
fn objects_of_another_device_are_refused_before_any_command() {
    let a = Device::open(&[], Importer::Hip).expect("device a");
    let b = Device::open(&[], Importer::Hip).expect("device b");
    let buffer = a.shared_buffer(256).expect("buffer");
    let e = b.read_buffer(&buffer, None, None).expect_err("another device's buffer");
    assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
    assert!(e.to_string().contains("the buffer was made on another VkDevice"), "{e}");
    assert_eq!(a.read_buffer(&buffer, None, None).expect("its own device").len(), 256);
}

/// Already handled; kept so they stay so: zero and absurd sizes, sizes that do not fit the
/// allocation, and objects that outlive the `Device` they came from.
#[test]
fn wrong_sizes_and_drop_order_end_in_errors_not_crashes() {
    let device = Device::open(&[], Importer::Hip).expect("device");
    assert_eq!(device.shared_buffer(0).err().expect("0 bytes").kind(), ErrorKind::Invalid);
    // Refused before vkCreateBuffer, naming the limit (tests/limits.rs has every limit).
    for bytes in [u64::MAX, 1 << 62, 1 << 40] {
        let e = device.shared_buffer(bytes).err().expect("more than any device has");
        assert_eq!(e.limit(), Some(Limit::MaxBufferSize), "{bytes}: {e}");
    }
    let buffer = device.shared_buffer(4096).expect("buffer");
    for (allocation_size, size) in [(4096, 0), (4096, 8192)] {
        let mut m = buffer.export().expect("export");
        (m.allocation_size, m.size) = (allocation_size, size);
        let e = device.import_buffer(m).err().expect("sizes that do not fit");
        assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
    }
    let imported = device.import_buffer(buffer.export().expect("export")).expect("import");
    // The last handle to the Device goes first: the objects keep what they need alive.
    drop(device);
    drop(buffer);
    drop(imported);
}

/// CUDA kernels in Vulkan's queue on a device without `VK_NVX_binary_import` (lavapipe): refused
/// by name, not ash's stand-in entry point panicking. Already handled; kept so it stays so.
#[test]
fn a_cuda_module_on_a_device_without_the_extension_is_refused() {
    use vkhip_interop::cuda_in_vulkan::CuModule;
    let device = Device::open(&[], Importer::Hip).expect("device");
    // SAFETY: the instance and device are live for the call; the missing extension is what is
    // tested, and `load` resolves its entry point before calling it.
    let e = unsafe { CuModule::load(device.instance(), device.ash(), b"not a cubin") }
        .err()
        .expect("no VK_NVX_binary_import here");
    assert!(e.is_environment() && e.to_string().contains("vkCreateCuModuleNVX does not resolve"), "{e}");
    // SAFETY: as above; an empty image is refused before anything else.
    let e = unsafe { CuModule::load(device.instance(), device.ash(), b"") }.err().expect("empty");
    assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
}
