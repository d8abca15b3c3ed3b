// quiver's JavaScript loader: read a .qfb (qfb.mjs) and run its WGSL kernels with WebGPU
// (webgpu.mjs). Browsers: navigator.gpu; Node: the `webgpu` package through nodeGpu().
export { FatBinary, QfbError, parseManifest, fnv1a64, checksumHex, LIMITS, SCALAR_TYPES, TARGETS } from './qfb.mjs';
export { Module, Kernel, parseWgslImage, nodeGpu, requestDevice, createBuffer, upload, download, f32ToF16Bits, f32ToBf16Bits } from './webgpu.mjs';
export { xxh64 } from './xxh64.mjs';
