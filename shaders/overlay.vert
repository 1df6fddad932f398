#version 450
// shaders/overlay.vert: the frame-time overlay's screen-space rectangle, without vertex or index
// buffers (see src/shaders.rs and src/vk/overlay.rs for the pipeline interface).
//
// Draw: topology TRIANGLE_STRIP, vkCmdDraw(vertexCount = 4, instanceCount = 1, 0, 0).
// Vertex i is the corner (i & 1, i >> 1) of the rectangle; v_uv is that corner: (0, 0) top-left,
// (1, 1) bottom-right.

// Push constants, shared with overlay.frag (VERTEX | FRAGMENT stages): 32 bytes, mirrored by
// `vkhip::shaders::OverlayPush` (natural offsets, checked against the SPIR-V by a test).
layout(push_constant) uniform OverlayPush {
    vec4 rect;       // offset  0: x0, y0, x1, y1 of the rectangle in Vulkan NDC (y down)
    float top_ms;    // offset 16: milliseconds at the top edge (the bottom edge is 0 ms)
    float ref_ms;    // offset 20: the reference line (16.7 ms)
    float height_px; // offset 24: the rectangle's height in pixels (line widths)
    uint count;      // offset 28: samples (columns) in the buffer, >= 1
} pc;

layout(location = 0) out vec2 v_uv;

void main() {
    // (uint() because naga types gl_VertexIndex as uint while GLSL says int.)
    uint vi = uint(gl_VertexIndex);
    vec2 corner = vec2(float(vi & 1u), float(vi >> 1u));
    v_uv = corner;
    gl_Position = vec4(mix(pc.rect.x, pc.rect.z, corner.x), mix(pc.rect.y, pc.rect.w, corner.y), 0.0, 1.0);
}
