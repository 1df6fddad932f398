#version 450
// The height-field surface. No vertex or index buffers: instance r draws the triangle strip
// between grid rows r and r+1; vertex i of the strip is grid point (i/2, r + i%2).
// Draw: vkCmdDraw(vertexCount = 2*W, instanceCount = H-1).

layout(set = 0, binding = 0, std430) readonly buffer Heights { float h[]; } heights;

layout(push_constant) uniform Push {
    mat4 view_proj;     // offset 0
    vec4 eye_pos;       // offset 64
    uint width;         // offset 80
    uint height;        // offset 84
    float height_scale; // offset 88
    float pad;          // offset 92
} pc;

layout(location = 0) out vec3 v_world;
layout(location = 1) out vec3 v_normal;
layout(location = 2) out float v_height;

float height_at(int x, int y) {
    x = clamp(x, 0, int(pc.width) - 1);
    y = clamp(y, 0, int(pc.height) - 1);
    return heights.h[y * int(pc.width) + x] * pc.height_scale;
}

void main() {
    int vi = int(gl_VertexIndex);
    int x = vi / 2;
    int y = int(gl_InstanceIndex) + vi % 2;
    float du = 2.0 / float(pc.width - 1u);
    float dv = 2.0 / float(pc.height - 1u);
    float hc = height_at(x, y);
    vec3 p = vec3(float(x) * du - 1.0, hc, float(y) * dv - 1.0);
    // Normal from central differences (one-sided at the edges via clamping).
    float hl = height_at(x - 1, y);
    float hr = height_at(x + 1, y);
    float hd = height_at(x, y - 1);
    float hu = height_at(x, y + 1);
    float sx = float(min(x + 1, int(pc.width) - 1) - max(x - 1, 0)) * du;
    float sz = float(min(y + 1, int(pc.height) - 1) - max(y - 1, 0)) * dv;
    vec3 n = normalize(vec3(-(hr - hl) / sx, 1.0, -(hu - hd) / sz));
    v_world = p;
    v_normal = n;
    v_height = hc;
    gl_Position = pc.view_proj * vec4(p, 1.0);
}
