//! Hand-offs of a shared image between Vulkan and the compute API: the named steps, the
//! Vulkan accesses they take ([`ImageAccess`]), and the barriers they record.
//!
//! **Ownership and layouts.** A shared image is created in exclusive sharing mode, so one side
//! owns it at a time: Vulkan's queue family ([`super::Device::queue_family`]) or the compute API
//! (`VK_QUEUE_FAMILY_EXTERNAL`). While the compute API owns it, the image is in layout
//! `GENERAL`. While Vulkan owns it, it is in the layout of Vulkan's access (colour attachment,
//! transfer source or destination, shader read-only, or `GENERAL` for storage).
//!
//! **Every layout transition is an ordinary barrier on Vulkan's own queue family; every
//! ownership transfer keeps the layout (`oldLayout` = `newLayout` = `GENERAL`).** The Vulkan
//! specification, section "Queue Family Ownership Transfer" (chapter "Synchronization and Cache
//! Control"), requires a transfer's release and acquire barriers to carry the same `oldLayout`
//! and `newLayout` when the transfer changes the layout; with `VK_QUEUE_FAMILY_EXTERNAL` one of
//! the two barriers is the compute API's, which has no layouts, so no transfer here changes one.
//! Section "External Resource Sharing" (chapter "Resource Creation") requires the release and
//! acquire themselves: without them the other API may see undefined contents. Carrying the transition inside the release, as this crate once did (UNDEFINED → GENERAL in
//! the release to the compute API), is reported by the Khronos validation layer (1.3.239) as
//! `UNASSIGNED-CoreValidation-DrawState-InvalidImageLayout` on every later submit on a device
//! with `synchronization2` enabled — the layer applies a transfer's transition on the acquire
//! side only — and was clean without it. The shape here is clean on both, on Vulkan 1.2 and 1.3
//! (tests/image_layouts.rs).
//!
//! **The sequence** ([`SharedImage`](super::SharedImage)'s methods), both directions (Vulkan
//! renders, the compute API filters, Vulkan reads):
//!
//! ```text
//!  new image (UNDEFINED, nobody's)
//!    ├─ cmd_prepare                  UNDEFINED → GENERAL, release        ⇒ the compute API's
//!    └─ cmd_prepare_for_vulkan(A)    UNDEFINED → A's layout              ⇒ Vulkan's
//!  Vulkan's, after its last access A:
//!       cmd_release(A)               A's layout → GENERAL, release       ⇒ the compute API's
//!  the compute API's (its kernels read and write; semaphores order it with Vulkan):
//!       cmd_acquire(B)               acquire, GENERAL → B's layout       ⇒ Vulkan's, for B
//!  Vulkan's, between its own accesses A and B:
//!       cmd_transition(A, B)         A's layout → B's layout
//! ```
//!
//! A frame of a post-process (render → kernel → present), in the command buffers' order:
//! `cmd_acquire(COLOR_ATTACHMENT_WRITE)`, draw, `cmd_release(COLOR_ATTACHMENT_WRITE)` on the
//! rendered image; signal, the kernel reads it and writes the second image, signal;
//! `cmd_acquire(TRANSFER_READ)`, blit, `cmd_release(TRANSFER_READ)` on the second image. The
//! semaphores order the two APIs; the barriers move ownership, change layouts and make writes
//! visible. Buffers have no layouts: their pair is [`SharedBuffer::cmd_acquire`](super::SharedBuffer::cmd_acquire)
//! and [`SharedBuffer::cmd_release`](super::SharedBuffer::cmd_release).

use ash::vk;

/// One way Vulkan uses a shared image while it owns it: the pipeline stages, the access types
/// and the layout the image must be in. Built from the named constants and constructors, so the
/// layout always suits the access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageAccess {
    stage: vk::PipelineStageFlags,
    access: vk::AccessFlags,
    layout: vk::ImageLayout,
}

impl ImageAccess {
    /// Rendered into as a colour attachment (`COLOR_ATTACHMENT_OPTIMAL`; loads, blends and
    /// stores).
    pub const COLOR_ATTACHMENT_WRITE: ImageAccess = ImageAccess {
        stage: vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
        access: vk::AccessFlags::from_raw(
            vk::AccessFlags::COLOR_ATTACHMENT_READ.as_raw()
                | vk::AccessFlags::COLOR_ATTACHMENT_WRITE.as_raw(),
        ),
        layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
    };
    /// Written by a copy, blit or clear (`TRANSFER_DST_OPTIMAL`).
    pub const TRANSFER_WRITE: ImageAccess = ImageAccess {
        stage: vk::PipelineStageFlags::TRANSFER,
        access: vk::AccessFlags::TRANSFER_WRITE,
        layout: vk::ImageLayout::TRANSFER_DST_OPTIMAL,
    };
    /// Read by a copy or blit (`TRANSFER_SRC_OPTIMAL`).
    pub const TRANSFER_READ: ImageAccess = ImageAccess {
        stage: vk::PipelineStageFlags::TRANSFER,
        access: vk::AccessFlags::TRANSFER_READ,
        layout: vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
    };

    /// Sampled by shaders of `stages` (`SHADER_READ_ONLY_OPTIMAL`).
    pub const fn sampled(stages: vk::PipelineStageFlags) -> ImageAccess {
        ImageAccess {
            stage: stages,
            access: vk::AccessFlags::SHADER_READ,
            layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
        }
    }

    /// Read and/or written as a storage image by shaders of `stages` (`GENERAL`); `access` is
    /// `SHADER_READ`, `SHADER_WRITE` or both.
    pub const fn storage(stages: vk::PipelineStageFlags, access: vk::AccessFlags) -> ImageAccess {
        ImageAccess { stage: stages, access, layout: vk::ImageLayout::GENERAL }
    }

    /// Any access in layout `GENERAL` (what the compute API's side of a hand-off is in): e.g.
    /// (TRANSFER, TRANSFER_READ) for a copy that keeps the image in `GENERAL`.
    pub const fn general(stages: vk::PipelineStageFlags, access: vk::AccessFlags) -> ImageAccess {
        ImageAccess::storage(stages, access)
    }

    pub fn stage(&self) -> vk::PipelineStageFlags {
        self.stage
    }

    pub fn access(&self) -> vk::AccessFlags {
        self.access
    }

    pub fn layout(&self) -> vk::ImageLayout {
        self.layout
    }
}

/// One side of a barrier: stages, access types, layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Side {
    pub(crate) stage: vk::PipelineStageFlags,
    pub(crate) access: vk::AccessFlags,
    pub(crate) layout: vk::ImageLayout,
}

impl From<ImageAccess> for Side {
    fn from(a: ImageAccess) -> Side {
        Side { stage: a.stage, access: a.access, layout: a.layout }
    }
}

/// The layout the compute API's tenure is in, and that every ownership transfer keeps.
pub(crate) const EXTERNAL_LAYOUT: vk::ImageLayout = vk::ImageLayout::GENERAL;

/// Where a chain of two barriers meets: the first's destination and the second's source
/// (every stage, no access: the first made the writes available, the second makes them visible).
const JOIN: (vk::PipelineStageFlags, vk::AccessFlags) =
    (vk::PipelineStageFlags::ALL_COMMANDS, vk::AccessFlags::empty());

/// Who owns the image before and after a barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owners {
    /// Vulkan before and after: a layout transition only.
    Vulkan,
    /// Vulkan → the compute API.
    Release,
    /// The compute API → Vulkan.
    Acquire,
}

/// One image memory barrier, as this module records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Barrier {
    pub(crate) owners: Owners,
    pub(crate) src: (vk::PipelineStageFlags, vk::AccessFlags),
    pub(crate) dst: (vk::PipelineStageFlags, vk::AccessFlags),
    pub(crate) layouts: (vk::ImageLayout, vk::ImageLayout),
}

/// The barriers of a release after Vulkan's last access `after` (pure; unit-tested): the
/// transition to GENERAL where needed, then the transfer that keeps GENERAL.
pub(crate) fn release(after: Side) -> Vec<Barrier> {
    let end = (vk::PipelineStageFlags::BOTTOM_OF_PIPE, vk::AccessFlags::empty());
    if after.layout == EXTERNAL_LAYOUT {
        return vec![Barrier {
            owners: Owners::Release,
            src: (after.stage, after.access),
            dst: end,
            layouts: (EXTERNAL_LAYOUT, EXTERNAL_LAYOUT),
        }];
    }
    vec![
        Barrier {
            owners: Owners::Vulkan,
            src: (after.stage, after.access),
            dst: JOIN,
            layouts: (after.layout, EXTERNAL_LAYOUT),
        },
        Barrier { owners: Owners::Release, src: JOIN, dst: end, layouts: (EXTERNAL_LAYOUT, EXTERNAL_LAYOUT) },
    ]
}

/// The barriers of an acquire before Vulkan's first access `before` (pure; unit-tested): the
/// transfer that keeps GENERAL, then the transition to `before`'s layout where needed.
pub(crate) fn acquire(before: Side) -> Vec<Barrier> {
    let start = (vk::PipelineStageFlags::TOP_OF_PIPE, vk::AccessFlags::empty());
    if before.layout == EXTERNAL_LAYOUT {
        return vec![Barrier {
            owners: Owners::Acquire,
            src: start,
            dst: (before.stage, before.access),
            layouts: (EXTERNAL_LAYOUT, EXTERNAL_LAYOUT),
        }];
    }
    vec![
        Barrier {
            owners: Owners::Acquire,
            src: start,
            dst: JOIN,
            layouts: (EXTERNAL_LAYOUT, EXTERNAL_LAYOUT),
        },
        Barrier {
            owners: Owners::Vulkan,
            src: JOIN,
            dst: (before.stage, before.access),
            layouts: (EXTERNAL_LAYOUT, before.layout),
        },
    ]
}

/// The barrier of a transition between two Vulkan accesses (`from` may be UNDEFINED: a new
/// image, contents discarded).
pub(crate) fn transition(from: Side, to: Side) -> Barrier {
    Barrier {
        owners: Owners::Vulkan,
        src: (from.stage, from.access),
        dst: (to.stage, to.access),
        layouts: (from.layout, to.layout),
    }
}

/// A new image: nothing to wait for, nothing to keep.
pub(crate) const NEW: Side = Side {
    stage: vk::PipelineStageFlags::TOP_OF_PIPE,
    access: vk::AccessFlags::empty(),
    layout: vk::ImageLayout::UNDEFINED,
};

/// Record `barriers` on `image` in order, one `vkCmdPipelineBarrier` each (a chain: each one's
/// source stages include the previous one's destination stages).
///
/// # Safety
/// `cmd` is a command buffer of `d` in the recording state, for a queue of `family`; `image` is
/// a live single-level, single-layer colour image of `d`.
pub(crate) unsafe fn record(
    d: &ash::Device,
    cmd: vk::CommandBuffer,
    family: u32,
    image: vk::Image,
    barriers: &[Barrier],
) {
    let range = vk::ImageSubresourceRange::default()
        .aspect_mask(vk::ImageAspectFlags::COLOR)
        .level_count(1)
        .layer_count(1);
    for b in barriers {
        let (src_family, dst_family) = match b.owners {
            Owners::Vulkan => (vk::QUEUE_FAMILY_IGNORED, vk::QUEUE_FAMILY_IGNORED),
            Owners::Release => (family, vk::QUEUE_FAMILY_EXTERNAL),
            Owners::Acquire => (vk::QUEUE_FAMILY_EXTERNAL, family),
        };
        debug_assert!(
            b.owners == Owners::Vulkan || b.layouts.0 == b.layouts.1,
            "a transfer keeps the layout"
        );
        let barrier = vk::ImageMemoryBarrier::default()
            .src_access_mask(b.src.1)
            .dst_access_mask(b.dst.1)
            .old_layout(b.layouts.0)
            .new_layout(b.layouts.1)
            .src_queue_family_index(src_family)
            .dst_queue_family_index(dst_family)
            .image(image)
            .subresource_range(range);
        // SAFETY: per this function's contract.
        unsafe {
            d.cmd_pipeline_barrier(cmd, b.src.0, b.dst.0, vk::DependencyFlags::empty(), &[], &[], &[barrier])
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every transfer keeps GENERAL; every layout change is Vulkan's own; consecutive barriers
    /// chain (the second's source stages cover the first's destination stages).
    fn check(barriers: &[Barrier]) {
        for b in barriers {
            if b.owners != Owners::Vulkan {
                assert_eq!(b.layouts, (EXTERNAL_LAYOUT, EXTERNAL_LAYOUT), "{b:?}");
            }
        }
        for pair in barriers.windows(2) {
            assert!(
                pair[1].src.0.contains(pair[0].dst.0)
                    || pair[1].src.0 == vk::PipelineStageFlags::ALL_COMMANDS,
                "{pair:?}"
            );
            assert_eq!(pair[0].layouts.1, pair[1].layouts.0, "{pair:?}");
        }
    }

    #[test]
    fn release_transitions_on_vulkan_then_transfers_in_general() {
        let r = release(ImageAccess::COLOR_ATTACHMENT_WRITE.into());
        check(&r);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].owners, Owners::Vulkan);
        assert_eq!(r[0].layouts, (vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL, vk::ImageLayout::GENERAL));
        assert_eq!(r[0].src.1, ImageAccess::COLOR_ATTACHMENT_WRITE.access());
        assert_eq!(r[1].owners, Owners::Release);
        let storage =
            ImageAccess::storage(vk::PipelineStageFlags::COMPUTE_SHADER, vk::AccessFlags::SHADER_WRITE);
        let r = release(storage.into());
        assert_eq!(r.len(), 1, "already GENERAL: the transfer alone");
        assert_eq!(r[0].src, (vk::PipelineStageFlags::COMPUTE_SHADER, vk::AccessFlags::SHADER_WRITE));
    }

    #[test]
    fn acquire_transfers_in_general_then_transitions_on_vulkan() {
        let a = acquire(ImageAccess::TRANSFER_READ.into());
        check(&a);
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].owners, Owners::Acquire);
        assert_eq!(a[1].layouts, (vk::ImageLayout::GENERAL, vk::ImageLayout::TRANSFER_SRC_OPTIMAL));
        assert_eq!(a[1].dst, (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ));
        let sampled = ImageAccess::sampled(vk::PipelineStageFlags::FRAGMENT_SHADER);
        assert_eq!(acquire(sampled.into())[1].layouts.1, vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL);
        let general = ImageAccess::general(vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ);
        assert_eq!(acquire(general.into()).len(), 1);
    }

    #[test]
    fn transitions_name_both_layouts() {
        let t = transition(NEW, ImageAccess::TRANSFER_WRITE.into());
        assert_eq!(t.layouts, (vk::ImageLayout::UNDEFINED, vk::ImageLayout::TRANSFER_DST_OPTIMAL));
        assert_eq!(t.owners, Owners::Vulkan);
    }
}
