#version 450
// shaders/surface.vert: the height field as H-1 triangle strips, without vertex or index
// buffers (see src/shaders.rs for the whole pipeline interface).
//
// Draw: topology TRIANGLE_STRIP, vkCmdDraw(vertexCount = 2*W, instanceCount = H-1,
// firstVertex = 0, firstInstance = 0). Instance r is the strip between rows r and r+1;
// vertex i is grid point (x, y) = (i/2, r + i%2).
//
// World space (y up): position = (u, h*height_scale, v) with u = 2x/(W-1)-1, v = 2y/(H-1)-1.
// Normal: central differences of the neighbouring heights (one-sided at the edges).

layout(set = 0, binding = 0, std430) readonly buffer Heights {
    float h[]; // row-major, index = y*width + x (src/sim.rs)
};

// Push constants, shared with surface.frag (VERTEX | FRAGMENT stages): 96 bytes, mirrored by
// `vkhip::shaders::SurfacePush`. (naga's GLSL frontend does not accept per-member
// layout(offset = N); these are the natural offsets, checked against the SPIR-V by a test.)
layout(push_constant) uniform SurfacePush {
    mat4 view_proj;     // offset  0: world -> Vulkan clip space, column-major
    vec4 eye_pos;       // offset 64: camera position in world space (w ignored)
    uint width;         // offset 80: W
    uint height;        // offset 84: H
    float height_scale; // offset 88: world y = height * height_scale
    float pad;          // offset 92: unused
#ifdef VKHIP_LAYERED
    uint layer;         // offset 96: the view: the layer of the target written (gl_Layer)
    uint heights_base;  // offset 100: the first height of this view's environment
#endif
} pc;

layout(location = 0) out vec3 v_world;   // world-space position
layout(location = 1) out vec3 v_normal;  // world-space normal (not normalised)
layout(location = 2) out float v_height; // raw height from the buffer (sim units)
#ifdef VKHIP_LAYERED
// gl_Layer: naga's GLSL frontend has no such built-in, so build.rs compiles this variant with
// an ordinary output at location 15 and rewrites its decoration to BuiltIn Layer (SPIR-V 1.5,
// capability ShaderLayer = Vulkan 1.2's shaderOutputLayer).
layout(location = 15) flat out uint v_layer;
#endif

float height_at(uint x, uint y) {
#ifdef VKHIP_LAYERED
    return h[pc.heights_base + y * pc.width + x];
#else
    return h[y * pc.width + x];
#endif
}

void main() {
    // (uint() because naga types these built-ins as uint while GLSL says int.)
    uint vi = uint(gl_VertexIndex);
    uint x = vi >> 1u;
    uint y = uint(gl_InstanceIndex) + (vi & 1u);

    uint last_x = pc.width - 1u;
    uint last_y = pc.height - 1u;
    float hc = height_at(x, y);

    // Neighbours, clamped to the grid: central differences inside, one-sided at the edges.
    uint x0 = max(x, 1u) - 1u;
    uint x1 = min(x + 1u, last_x);
    uint y0 = max(y, 1u) - 1u;
    uint y1 = min(y + 1u, last_y);
    float du = float(x1 - x0) * (2.0 / float(last_x)); // world distance between the samples
    float dv = float(y1 - y0) * (2.0 / float(last_y));
    float dhdu = (height_at(x1, y) - height_at(x0, y)) * pc.height_scale / du;
    float dhdv = (height_at(x, y1) - height_at(x, y0)) * pc.height_scale / dv;

    float u = 2.0 * float(x) / float(last_x) - 1.0;
    float v = 2.0 * float(y) / float(last_y) - 1.0;
    vec3 world = vec3(u, hc * pc.height_scale, v);

    v_world = world;
    v_normal = vec3(-dhdu, 1.0, -dhdv); // = d/dv x d/du of (u, s*h, v): points up (+y)
    v_height = hc;
    gl_Position = pc.view_proj * vec4(world, 1.0);
#ifdef VKHIP_LAYERED
    v_layer = pc.layer;
#endif
}
