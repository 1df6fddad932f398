//! What every object a compute device hands out is: the API's object, kept together with the
//! device it belongs to, and destroyed only once the device's stream is done with it. Written
//! once for `cuda` and `hip`.

use std::sync::Arc;

/// A compute device whose objects must wait for its stream before they are destroyed.
pub(crate) trait Quiesce {
    /// Make the device current on this thread and wait for its stream. Logs instead of failing
    /// (it runs in `Drop`).
    fn quiesce(&self);
}

/// `object` and the device it belongs to. On drop the device's stream is waited for, then
/// `object` is destroyed, then the device released (field order is drop order), so no object
/// goes while pending work may use it, whatever order the caller drops things in.
pub(crate) struct Held<T, D: Quiesce> {
    pub(crate) object: T,
    pub(crate) device: Arc<D>,
}

impl<T, D: Quiesce> Held<T, D> {
    pub(crate) fn new(object: T, device: &Arc<D>) -> Self {
        Held { object, device: device.clone() }
    }
}

impl<T, D: Quiesce> Drop for Held<T, D> {
    fn drop(&mut self) {
        self.device.quiesce();
    }
}
