// int_mix(const int32_t* in, int32_t* out, int32_t mul, int32_t bias, uint32_t mask, uint32_t n):
// out[i] = (in[i] * mul + bias) ^ mask, with two's-complement wrap-around.
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer In { int data[]; } src;
layout(set = 0, binding = 1) writeonly buffer Out { int data[]; } dst;
layout(set = 0, binding = 2) readonly buffer Mul { int value; } mul;
layout(set = 0, binding = 3) readonly buffer Bias { int value; } bias;
layout(set = 0, binding = 4) readonly buffer Mask { uint value; } mask;
layout(set = 0, binding = 5) readonly buffer N { uint value; } n;

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < n.value) dst.data[i] = (src.data[i] * mul.value + bias.value) ^ int(mask.value);
}
