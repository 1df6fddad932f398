#version 450
// shaders/surface.frag: height colour ramp + hemisphere ambient + Lambert + a little
// Blinn-Phong, from a fixed light direction. Two-sided: the normal is turned towards the eye.
// Output is written as-is (no sRGB encoding here): meant for an R8G8B8A8_UNORM target (or a
// B8G8R8A8_UNORM swapchain); the colours below are chosen as display values.

// Same block as surface.vert (see there and src/shaders.rs for offsets).
layout(push_constant) uniform SurfacePush {
    mat4 view_proj;     // offset  0
    vec4 eye_pos;       // offset 64
    uint width;         // offset 80
    uint height;        // offset 84
    float height_scale; // offset 88
    float pad;          // offset 92
} pc;

layout(location = 0) in vec3 v_world;
layout(location = 1) in vec3 v_normal;
layout(location = 2) in float v_height;

layout(location = 0) out vec4 out_color;

// = sim::AMPLITUDE in src/sim.rs (a test checks they agree): heights lie in [-AMPLITUDE, AMPLITUDE].
const float AMPLITUDE = 0.25;

// Towards the light (world space, y up), normalised.
const vec3 LIGHT_DIR = vec3(-0.4082483, 0.8164966, 0.4082483);

// Blue -> cyan -> green -> yellow -> red, piecewise linear in t in [0, 1].
vec3 height_ramp(float t) {
    float s = clamp(t, 0.0, 1.0) * 4.0;
    vec3 c = mix(vec3(0.10, 0.20, 0.70), vec3(0.05, 0.65, 0.85), clamp(s, 0.0, 1.0));
    c = mix(c, vec3(0.20, 0.75, 0.30), clamp(s - 1.0, 0.0, 1.0));
    c = mix(c, vec3(0.95, 0.85, 0.25), clamp(s - 2.0, 0.0, 1.0));
    c = mix(c, vec3(0.90, 0.25, 0.15), clamp(s - 3.0, 0.0, 1.0));
    return c;
}

void main() {
    vec3 n = normalize(v_normal);
    vec3 to_eye = normalize(pc.eye_pos.xyz - v_world);
    if (dot(n, to_eye) < 0.0) {
        n = -n; // looking at the underside
    }

    float t = v_height / AMPLITUDE * 0.5 + 0.5; // [-A, A] -> [0, 1]
    vec3 base = height_ramp(t);

    // Faint contour lines every 0.2*AMPLITUDE, about one pixel wide (anti-aliased by fwidth).
    float level = v_height / AMPLITUDE * 5.0;
    float dist = abs(fract(level - 0.5) - 0.5) / max(fwidth(level), 1e-4);
    base *= 1.0 - 0.18 * (1.0 - clamp(dist, 0.0, 1.0));

    float hemi = 0.5 + 0.5 * n.y; // sky above, ground below
    vec3 ambient = mix(vec3(0.10, 0.09, 0.08), vec3(0.28, 0.31, 0.36), hemi);
    float lambert = max(dot(n, LIGHT_DIR), 0.0);
    vec3 half_dir = normalize(LIGHT_DIR + to_eye);
    float spec = lambert > 0.0 ? pow(max(dot(n, half_dir), 0.0), 64.0) : 0.0;
    float rim = pow(1.0 - max(dot(n, to_eye), 0.0), 4.0);

    vec3 color = base * (ambient + 0.80 * lambert) + 0.25 * spec + 0.10 * rim * vec3(0.6, 0.7, 0.9);
    out_color = vec4(clamp(color, 0.0, 1.0), 1.0);
}
