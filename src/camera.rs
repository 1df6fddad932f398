//! Orbit camera (glam): yaw/pitch/distance around the grid's centre. Drag rotates, the wheel zooms,
//! R resets. The default view shows the whole surface in perspective.

use glam::{Mat4, Vec3};

/// Orbit camera state.
///
/// # Examples
///
/// ```
/// use vkhip::camera::OrbitCamera;
///
/// let mut cam = OrbitCamera::default();
/// cam.zoom(1000.0); // the wheel zooms in, but never closer than MIN_DISTANCE
/// assert_eq!(cam.distance, OrbitCamera::MIN_DISTANCE);
/// cam.drag(0.0, 1e6); // pitch stays below the pole
/// assert!(cam.pitch <= 89f32.to_radians());
/// assert!((cam.eye().length() - cam.distance).abs() < 1e-5);
/// cam.reset();
/// assert_eq!(cam, OrbitCamera::default());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OrbitCamera {
    /// Rotation about the vertical axis, radians.
    pub yaw: f32,
    /// Elevation above the grid plane, radians (clamped to (0, 89°]).
    pub pitch: f32,
    /// Distance from the target.
    pub distance: f32,
    pub fov_y: f32,
}

impl Default for OrbitCamera {
    fn default() -> Self {
        OrbitCamera { yaw: 0.65, pitch: 0.58, distance: 3.6, fov_y: 45f32.to_radians() }
    }
}

impl OrbitCamera {
    pub const MIN_DISTANCE: f32 = 0.6;
    pub const MAX_DISTANCE: f32 = 20.0;

    /// Rotate by a mouse drag of (dx, dy) pixels.
    pub fn drag(&mut self, dx: f32, dy: f32) {
        self.yaw -= dx * 0.008;
        self.pitch = (self.pitch + dy * 0.008).clamp(0.02, 89f32.to_radians());
    }

    /// Zoom by wheel `lines` (positive = closer).
    pub fn zoom(&mut self, lines: f32) {
        self.distance = (self.distance * 0.9f32.powf(lines)).clamp(Self::MIN_DISTANCE, Self::MAX_DISTANCE);
    }

    pub fn reset(&mut self) {
        *self = OrbitCamera::default();
    }

    /// Eye position in world space (y up, grid in the xz plane centred at the origin).
    pub fn eye(&self) -> Vec3 {
        let (sy, cy) = self.yaw.sin_cos();
        let (sp, cp) = self.pitch.sin_cos();
        Vec3::new(cp * sy, sp, cp * cy) * self.distance
    }

    /// Projection × view for a viewport of `aspect` = width / height, in Vulkan clip space
    /// (y down, depth 0..1).
    pub fn view_proj(&self, aspect: f32) -> Mat4 {
        let view = Mat4::look_at_rh(self.eye(), Vec3::ZERO, Vec3::Y);
        let mut proj = Mat4::perspective_rh(self.fov_y, aspect.max(1e-3), 0.05, 100.0);
        proj.y_axis.y *= -1.0;
        proj * view
    }
}

/// One camera of `--views` (and of the embed API's `Frames::set_poses`): a position, the point
/// it looks at and the up direction in world space (y up; the surface spans [−1, 1] in x and z,
/// heights within ±[`crate::sim::AMPLITUDE`]), and the vertical field of view in degrees.
/// `#[repr(C)]`, 10 `f32`s: an `(N, 10)` float32 array is N poses.
///
/// # Examples
///
/// ```
/// use vkhip::camera::{OrbitCamera, Pose};
///
/// let poses = Pose::default_spread(4);
/// assert_eq!(poses[0], Pose::from_orbit(&OrbitCamera::default())); // view 0: the app's camera
/// assert!(poses.iter().all(|p| p.check().is_ok()));
/// let bad = Pose { target: poses[1].eye, ..poses[1] };
/// assert_eq!(bad.check().unwrap_err(), "the eye is the target");
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pose {
    pub eye: [f32; 3],
    pub target: [f32; 3],
    /// Need not be orthogonal to the view direction; must not be parallel to it.
    pub up: [f32; 3],
    /// Vertical field of view, degrees, in (0, 180).
    pub fov_y_deg: f32,
}

impl Pose {
    /// A camera at `eye` looking at `target`, y up, 45°.
    pub fn look_at(eye: [f32; 3], target: [f32; 3]) -> Self {
        Pose { eye, target, up: [0.0, 1.0, 0.0], fov_y_deg: 45.0 }
    }

    /// The orbit camera's pose (it looks at the origin, y up).
    pub fn from_orbit(cam: &OrbitCamera) -> Self {
        Pose {
            eye: cam.eye().to_array(),
            target: [0.0; 3],
            up: [0.0, 1.0, 0.0],
            fov_y_deg: cam.fov_y.to_degrees(),
        }
    }

    /// The default cameras of `n` views: the app's orbit camera at `n` evenly spaced azimuths
    /// (yaw 0.65 + 2π·i/n; same pitch, distance and field of view), so view 0 is the app's one
    /// camera.
    pub fn default_spread(n: u32) -> Vec<Pose> {
        Pose::spread_around(&OrbitCamera::default(), n)
    }

    /// `n` views of `camera` at `n` evenly spaced azimuths (yaw + 2π·i/n), view 0 `camera`
    /// itself: the default spread around the default camera, the window's views around the one
    /// the user drags.
    pub fn spread_around(camera: &OrbitCamera, n: u32) -> Vec<Pose> {
        (0..n)
            .map(|i| {
                let yaw = camera.yaw + std::f32::consts::TAU * i as f32 / n.max(1) as f32;
                Pose::from_orbit(&OrbitCamera { yaw, ..*camera })
            })
            .collect()
    }

    /// Why this pose cannot be drawn, if it cannot: a non-finite value, the eye at the target,
    /// an up parallel to the view direction, a field of view outside (0, 180).
    pub fn check(&self) -> Result<(), String> {
        let all = self.eye.iter().chain(&self.target).chain(&self.up).chain([&self.fov_y_deg]);
        if !all.into_iter().all(|v| v.is_finite()) {
            return Err("a value is not finite".into());
        }
        if !(self.fov_y_deg > 0.0 && self.fov_y_deg < 180.0) {
            return Err(format!("fov_y_deg {} is outside (0, 180)", self.fov_y_deg));
        }
        let dir = Vec3::from(self.target) - Vec3::from(self.eye);
        if dir.length() < 1e-6 {
            return Err("the eye is the target".into());
        }
        let up = Vec3::from(self.up);
        if up.length() < 1e-6 || dir.normalize().cross(up.normalize()).length() < 1e-4 {
            return Err("up is zero or parallel to the view direction".into());
        }
        Ok(())
    }

    /// Projection × view for a viewport of `aspect` = width / height, in Vulkan clip space
    /// (y down, depth 0..1), as [`OrbitCamera::view_proj`] (near 0.05, far 100).
    pub fn view_proj(&self, aspect: f32) -> Mat4 {
        let view = Mat4::look_at_rh(self.eye.into(), self.target.into(), self.up.into());
        let mut proj = Mat4::perspective_rh(self.fov_y_deg.to_radians(), aspect.max(1e-3), 0.05, 100.0);
        proj.y_axis.y *= -1.0;
        proj * view
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_view_sees_every_corner() {
        let cam = OrbitCamera::default();
        let vp = cam.view_proj(16.0 / 9.0);
        for (x, z) in [(-1.0, -1.0), (1.0, -1.0), (-1.0, 1.0), (1.0, 1.0)] {
            for y in [-0.25, 0.25] {
                let c = vp * glam::Vec4::new(x, y, z, 1.0);
                let n = c.truncate() / c.w;
                assert!(
                    c.w > 0.0 && n.x.abs() < 1.0 && n.y.abs() < 1.0 && (0.0..1.0).contains(&n.z),
                    "corner ({x},{y},{z}) → {n}"
                );
            }
        }
    }

    #[test]
    fn zoom_and_pitch_are_clamped_and_reset_restores() {
        let mut cam = OrbitCamera::default();
        cam.zoom(1000.0);
        assert_eq!(cam.distance, OrbitCamera::MIN_DISTANCE);
        cam.drag(0.0, 1e6);
        assert!(cam.pitch <= 89f32.to_radians());
        cam.reset();
        assert_eq!(cam, OrbitCamera::default());
    }
}
