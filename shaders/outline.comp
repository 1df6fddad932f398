#version 450
// shaders/outline.comp: the `vulkan` backend's post filter (`--post outline`), the native
// baseline of kernels/outline.hip. Exactly `outline_reference` (src/compute/post.rs), in
// integers:
//   lum(c)  = (77 r + 150 g + 29 b) >> 8
//   gx, gy  = Sobel of lum over the 3x3 neighbourhood, coordinates clamped to the image
//   keep    = 255 - min(255, |gx| + |gy|)
//   out     = (r keep / 255, g keep / 255, b keep / 255, 255)
// Images: RGBA8 UNORM storage images in layout GENERAL. A UNORM8 texel loads as c / 255 and
// round(c / 255 * 255) is c again; a stored k / 255 converts back to k (the nearest value), so
// the bytes are the integer formula's.
// Dispatch: (ceil(W/16), ceil(H/16), 1); invocations outside the image do nothing.

layout(local_size_x = 16, local_size_y = 16, local_size_z = 1) in;

layout(set = 0, binding = 0, rgba8) uniform readonly image2D scene;
layout(set = 0, binding = 1, rgba8) uniform writeonly image2D outlined;

// Push constants: 8 bytes, mirrored by `vkhip::shaders::OutlinePush`.
layout(push_constant) uniform OutlinePush {
    uint width;  // offset 0
    uint height; // offset 4
} pc;

ivec3 texel(int x, int y) {
    ivec2 at = ivec2(clamp(x, 0, int(pc.width) - 1), clamp(y, 0, int(pc.height) - 1));
    return ivec3(round(imageLoad(scene, at).rgb * 255.0));
}

int lum(ivec3 c) {
    return (77 * c.r + 150 * c.g + 29 * c.b) >> 8;
}

void main() {
    int x = int(gl_GlobalInvocationID.x);
    int y = int(gl_GlobalInvocationID.y);
    if (x >= int(pc.width) || y >= int(pc.height)) {
        return;
    }
    int gx = 0;
    int gy = 0;
    for (int j = -1; j <= 1; j++) {
        for (int i = -1; i <= 1; i++) {
            int l = lum(texel(x + i, y + j));
            gx += l * i * (2 - j * j);
            gy += l * j * (2 - i * i);
        }
    }
    int keep = 255 - min(255, abs(gx) + abs(gy));
    ivec3 c = texel(x, y);
    imageStore(outlined, ivec2(x, y), vec4(vec3(c * keep / 255) / 255.0, 1.0));
}
