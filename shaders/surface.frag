#version 450
// Colour map of the height (blue → cyan → green → yellow → red) with Lambert + ambient +
// Blinn-Phong lighting. Outputs linear values (UNORM targets, no sRGB conversion).

layout(push_constant) uniform Push {
    mat4 view_proj;
    vec4 eye_pos;
    uint width;
    uint height;
    float height_scale;
    float pad;
} pc;

layout(location = 0) in vec3 v_world;
layout(location = 1) in vec3 v_normal;
layout(location = 2) in float v_height;
layout(location = 0) out vec4 out_color;

// sim::AMPLITUDE (src/sim.rs): heights span [-AMPLITUDE, AMPLITUDE].
const float AMPLITUDE = 0.25;

vec3 ramp(float t) {
    t = clamp(t, 0.0, 1.0);
    vec3 c0 = vec3(0.10, 0.20, 0.85);
    vec3 c1 = vec3(0.05, 0.75, 0.90);
    vec3 c2 = vec3(0.20, 0.85, 0.30);
    vec3 c3 = vec3(0.95, 0.85, 0.15);
    vec3 c4 = vec3(0.90, 0.20, 0.10);
    if (t < 0.25) return mix(c0, c1, t * 4.0);
    if (t < 0.5) return mix(c1, c2, (t - 0.25) * 4.0);
    if (t < 0.75) return mix(c2, c3, (t - 0.5) * 4.0);
    return mix(c3, c4, (t - 0.75) * 4.0);
}

void main() {
    vec3 n = normalize(v_normal);
    vec3 v = normalize(pc.eye_pos.xyz - v_world);
    if (dot(n, v) < 0.0) n = -n; // the underside is lit too
    vec3 l = normalize(vec3(0.4, 0.85, 0.35));
    vec3 h = normalize(l + v);
    float t = v_height / (2.0 * AMPLITUDE * pc.height_scale) + 0.5;
    vec3 base = ramp(t);
    float diffuse = max(dot(n, l), 0.0);
    float spec = pow(max(dot(n, h), 0.0), 48.0);
    vec3 c = base * (0.28 + 0.72 * diffuse) + vec3(0.25) * spec;
    out_color = vec4(c, 1.0);
}
