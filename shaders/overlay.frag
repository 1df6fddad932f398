#version 450
// shaders/overlay.frag: the frame-time graph. One sample per column, oldest on the left, newest
// on the right; the vertical axis runs from 0 ms (bottom) to pc.top_ms (top).
//
// Drawn over a translucent dark background (alpha blending), in this order (later on top):
// - a thin grey border;
// - frame time (Series::Frame): a dark blue band from 0 up to the value, topped by a blue line;
// - the reference line at pc.ref_ms (16.7 ms, one frame at 60 Hz): red, about 2 px;
// - draw GPU time (Series::Draw): an orange line, about 2 px;
// - compute time (Series::Compute): a green line, about 2 px.
// A line joins each column's value to the previous column's, so steps stay connected.
// A negative sample means "no value for that frame": nothing is drawn for it.
// Keep the colours in step with the constants in src/overlay.rs (a test checks them).

layout(set = 0, binding = 0, std430) readonly buffer Samples {
    vec4 s[]; // column i: (frame ms, draw ms, compute ms, unused); negative = no value
};

// Same block as overlay.vert (see there and src/shaders.rs for offsets).
layout(push_constant) uniform OverlayPush {
    vec4 rect;       // offset  0
    float top_ms;    // offset 16
    float ref_ms;    // offset 20
    float height_px; // offset 24
    uint count;      // offset 28
} pc;

layout(location = 0) in vec2 v_uv;

layout(location = 0) out vec4 out_color;

const vec4 BACKGROUND = vec4(0.02, 0.025, 0.04, 0.8);
const vec3 BORDER_COLOR = vec3(0.4, 0.42, 0.48);
const vec3 FRAME_BAND_COLOR = vec3(0.12, 0.22, 0.45);
const vec3 FRAME_COLOR = vec3(0.25, 0.5, 0.95);
const vec3 REFERENCE_COLOR = vec3(0.95, 0.15, 0.25);
const vec3 DRAW_COLOR = vec3(1.0, 0.6, 0.05);
const vec3 COMPUTE_COLOR = vec3(0.3, 0.95, 0.4);

// Whether `ms` lies on the segment from `prev` to `cur`, widened by `half_width` (ms).
bool on_line(float ms, float prev, float cur, float half_width) {
    if (cur < 0.0) {
        return false;
    }
    float p = prev < 0.0 ? cur : prev;
    float lo = min(p, cur) - half_width;
    float hi = max(p, cur) + half_width;
    return ms >= lo && ms <= hi;
}

void main() {
    uint last = pc.count - 1u;
    uint col = min(uint(max(v_uv.x, 0.0) * float(pc.count)), last);
    uint prev_col = max(col, 1u) - 1u;
    vec4 cur = s[col];
    vec4 prev = s[prev_col];

    float ms = (1.0 - v_uv.y) * pc.top_ms; // this fragment's height in milliseconds
    float px = pc.top_ms / max(pc.height_px, 1.0); // one pixel in milliseconds

    vec4 color = BACKGROUND;
    vec2 edge = fwidth(v_uv); // one pixel in uv
    if (v_uv.x < edge.x || v_uv.y < edge.y || v_uv.x > 1.0 - edge.x || v_uv.y > 1.0 - edge.y) {
        color = vec4(BORDER_COLOR, 1.0);
    }
    if (cur.x >= 0.0 && ms <= cur.x) {
        color = vec4(FRAME_BAND_COLOR, 1.0);
    }
    if (on_line(ms, prev.x, cur.x, px)) {
        color = vec4(FRAME_COLOR, 1.0);
    }
    if (abs(ms - pc.ref_ms) <= px) {
        color = vec4(REFERENCE_COLOR, 1.0);
    }
    if (on_line(ms, prev.y, cur.y, px)) {
        color = vec4(DRAW_COLOR, 1.0);
    }
    if (on_line(ms, prev.z, cur.z, px)) {
        color = vec4(COMPUTE_COLOR, 1.0);
    }
    out_color = color;
}
