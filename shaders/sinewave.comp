#version 450
// The vulkan backend's writer: one invocation per grid point, same formula as sim::height.
layout(local_size_x = 16, local_size_y = 16) in;

layout(set = 0, binding = 0, std430) buffer Heights { float h[]; } heights;

layout(push_constant) uniform Push {
    uint width;      // offset 0
    uint height;     // offset 4
    float phase;     // offset 8
    float amplitude; // offset 12
    float frequency; // offset 16
} pc;

void main() {
    uint x = gl_GlobalInvocationID.x;
    uint y = gl_GlobalInvocationID.y;
    if (x >= pc.width || y >= pc.height) return;
    float u = 2.0 * float(x) / float(pc.width - 1u) - 1.0;
    float v = 2.0 * float(y) / float(pc.height - 1u) - 1.0;
    heights.h[y * pc.width + x] = pc.amplitude * sin(pc.frequency * u + pc.phase) * cos(pc.frequency * v + pc.phase);
}
