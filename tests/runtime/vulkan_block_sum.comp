// block_sum(const float* in, float* partial, uint32_t n): one partial sum per block, a tree
// reduction in workgroup (shared) memory with a barrier between levels.
#version 450
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer In { float data[]; } src;
layout(set = 0, binding = 1) writeonly buffer Out { float data[]; } partial;
layout(set = 0, binding = 2) readonly buffer N { uint value; } n;

shared float tile[256];

void main() {
  uint t = gl_LocalInvocationID.x;
  uint i = gl_GlobalInvocationID.x;
  tile[t] = i < n.value ? src.data[i] : 0.0;
  barrier();
  for (uint s = 128u; s > 0u; s >>= 1) {
    if (t < s) tile[t] += tile[t + s];
    barrier();
  }
  if (t == 0u) partial.data[gl_WorkGroupID.x] = tile[0];
}
