//! Shared images and buffers on every device shape an engine creates, under the validation layer.

#[path = "../../../tests/common/skip.rs"]
mod skip;
#[path = "common/engine.rs"]
mod engine;

use engine::{Engine, Shape};
use vkhip_interop::ImageFormat;

#[test]
fn prepared_image_reads_back_without_validation_messages_on_every_shape() {
    let mut failures = Vec::new();
    for shape in Shape::MATRIX {
        let Some(engine) = Engine::validated("prepared_image_reads_back_without_validation_messages_on_every_shape", shape) else { return };
        {
            let device = engine.hand_over().expect("hand over");
            let image = device.shared_image(ImageFormat::Rgba8Unorm, 5, 3).expect("image");
            // SAFETY: a one-shot command buffer of `device`, recording; the image is new.
            device.submit_one_shot(&[], &[], |cmd| unsafe { image.cmd_prepare(cmd) }).expect("prepare");
            device.read_image(&image, None, None).expect("read back");
        }
        let m = engine.take_messages();
        if !m.is_empty() { failures.push(format!("{}: {}", shape.name(), m.join("\n"))); }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
