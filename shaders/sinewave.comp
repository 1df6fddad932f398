#version 450
// shaders/sinewave.comp: the Vulkan compute backend's height-field writer.
//
// Implements exactly sim::height (src/sim.rs), same order of operations:
//   u = 2.0*float(x)/float(W-1) - 1.0,   v = 2.0*float(y)/float(H-1) - 1.0
//   h = amplitude * sin(frequency*u + phase) * cos(frequency*v + phase)
// Layout: one float per grid point, row-major, index = y*width + x.
// Dispatch: (ceil(W/16), ceil(H/16), envs); invocations outside the grid do nothing.
// Environment e (z) writes its field at e*W*H (see --envs in src/sim.rs).
//
// sin/cos are NOT the GLSL built-ins: Vulkan only guarantees those to 2^-11 absolute error,
// and every backend must agree with the CPU within 1e-5 on every driver (some drivers are
// accurate, but nothing promises it). vk_sin/vk_cos below are a Cody-Waite reduction by pi/2 (pi/2 split in three
// parts) plus the cephes sinf/cosf minimax polynomials on [-pi/4, pi/4]; ~1 ulp of f32 over the
// arguments used here (|x| < ~15). The same algorithm, with the same constants, lives in Rust in
// src/shaders.rs (`trig`), whose tests check that every constant below appears verbatim here
// and that the algorithm is within 5e-7 of f32::sin / f32::cos.

layout(local_size_x = 16, local_size_y = 16, local_size_z = 1) in;

// Write-only in use, but not declared `writeonly`: naga rejects write-only storage buffers
// ("Storage address space doesn't support write-only access"), so the SPIR-V has no
// NonReadable decoration. The descriptor is a plain STORAGE_BUFFER either way.
layout(set = 0, binding = 0, std430) buffer Heights {
    float h[];
};

// Push constants: 20 bytes, mirrored by `vkhip::shaders::SinewavePush`.
// (naga's GLSL frontend does not accept per-member layout(offset = N); the offsets below are
// the natural ones and are checked against the SPIR-V's Offset decorations by a Rust test.)
layout(push_constant) uniform SinewavePush {
    uint width;      // offset  0
    uint height;     // offset  4
    float phase;     // offset  8
    float amplitude; // offset 12
    float frequency; // offset 16
    uint envs;       // offset 20: environments, one after the other (dispatch z)
} pc;

// = sim::ENV_PHASES and sim::ENV_PHASE_STEP (src/sim.rs; a test checks they agree): environment e
// is at phase pc.phase + (e % ENV_PHASES) * ENV_PHASE_STEP (exact products: no rounding to differ).
const uint ENV_PHASES = 64u;
const float ENV_PHASE_STEP = 0.09375;

// --- Cody-Waite range reduction: x = k*(pi/2) + r, |r| <= pi/4 (+ rounding) ---------------
const float FRAC_2_PI = 0.63661975;  // 2/pi
const float PIO2_HI = 1.5703125;     // pi/2 = PIO2_HI + PIO2_MID + PIO2_LO; HI has 8 bits
const float PIO2_MID = 4.837513e-4;  // 11 significant bits: k*MID is exact for |k| < 2^13
const float PIO2_LO = 7.54979e-8;
// --- cephes sinf: sin(r) ~ r + r^3*(-S1 + z*(S2 - z*S3)), z = r^2 --------------------------
const float SIN_S1 = 0.16666655;
const float SIN_S2 = 8.332161e-3;
const float SIN_S3 = 1.9515296e-4;
// --- cephes cosf: cos(r) ~ 1 - z/2 + z^2*(C1 - z*(C2 - z*C3)) -------------------------------
const float COS_C1 = 0.041666646;
const float COS_C2 = 1.3887316e-3;
const float COS_C3 = 2.4433157e-5;

float sin_poly(float r) {
    float z = r * r;
    return ((-SIN_S3 * z + SIN_S2) * z - SIN_S1) * z * r + r;
}

float cos_poly(float r) {
    float z = r * r;
    return ((COS_C3 * z - COS_C2) * z + COS_C1) * z * z - 0.5 * z + 1.0;
}

// sin(x + quarter_turns * pi/2): quarter_turns = 0 gives sin, 1 gives cos.
float sin_quadrant(float x, int quarter_turns) {
    float k = floor(x * FRAC_2_PI + 0.5);
    float r = x - k * PIO2_HI - k * PIO2_MID - k * PIO2_LO;
    int q = (int(k) + quarter_turns) & 3;
    float s = sin_poly(r);
    float c = cos_poly(r);
    float m = (q & 1) != 0 ? c : s;
    return (q & 2) != 0 ? -m : m;
}

float vk_sin(float x) {
    return sin_quadrant(x, 0);
}

float vk_cos(float x) {
    return sin_quadrant(x, 1);
}

void main() {
    uint x = gl_GlobalInvocationID.x;
    uint y = gl_GlobalInvocationID.y;
    uint e = gl_GlobalInvocationID.z;
    if (x >= pc.width || y >= pc.height) {
        return;
    }
    float phase = pc.phase + float(e % ENV_PHASES) * ENV_PHASE_STEP;
    float u = 2.0 * float(x) / float(pc.width - 1u) - 1.0;
    float v = 2.0 * float(y) / float(pc.height - 1u) - 1.0;
    h[e * pc.width * pc.height + y * pc.width + x] =
        pc.amplitude * vk_sin(pc.frequency * u + phase) * vk_cos(pc.frequency * v + phase);
}
