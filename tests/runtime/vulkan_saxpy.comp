// saxpy(const float* x, float* y, float a, uint32_t n) following docs/abi.md: parameter i is the
// storage buffer at binding i; scalars are one-member storage buffers.
#version 450
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer X { float data[]; } x;
layout(set = 0, binding = 1) buffer Y { float data[]; } y;
layout(set = 0, binding = 2) readonly buffer A { float value; } a;
layout(set = 0, binding = 3) readonly buffer N { uint value; } n;

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < n.value) y.data[i] = a.value * x.data[i] + y.data[i];
}
