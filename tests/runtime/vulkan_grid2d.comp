// grid2d(float* out, uint32_t width, uint32_t height, float scale): a 16x8 block over a 2-D
// grid; out[y * width + x] = x * scale + y.
#version 450
layout(local_size_x = 16, local_size_y = 8) in;
layout(set = 0, binding = 0) writeonly buffer Out { float data[]; } dst;
layout(set = 0, binding = 1) readonly buffer W { uint value; } width;
layout(set = 0, binding = 2) readonly buffer H { uint value; } height;
layout(set = 0, binding = 3) readonly buffer S { float value; } scale;

void main() {
  uint x = gl_GlobalInvocationID.x;
  uint y = gl_GlobalInvocationID.y;
  if (x < width.value && y < height.value)
    dst.data[y * width.value + x] = float(x) * scale.value + float(y);
}
