// Types of quiver's JavaScript loader (index.mjs). WebGPU types come from @webgpu/types.
/// <reference types="@webgpu/types" />

export type QfbErrorCode = 'InvalidFatBinary' | 'InvalidArgument' | 'NotFound' | 'Unsupported' | 'CompileError' | 'DeviceError';
export class QfbError extends Error {
  readonly code: QfbErrorCode;
  constructor(code: QfbErrorCode, message: string);
}

export type ScalarTypeName = 'bool' | 'int8_t' | 'uint8_t' | 'int16_t' | 'uint16_t' | 'int32_t' | 'uint32_t' |
  'int64_t' | 'uint64_t' | 'half' | 'bf16' | 'float' | 'double';
// The format's target table (qfb.mjs TARGETS, the same names as runtime/format/targets.h).
export const TARGETS: readonly ['ptx', 'cubin', 'spirv', 'cpu', 'hsaco', 'msl', 'metallib', 'wgsl'];
export type TargetName = (typeof TARGETS)[number];

export interface Param {
  name: string;
  type: ScalarTypeName;
  vecWidth: 1 | 2 | 4 | 8;
  buffer: boolean;
  access: 'read' | 'read_write';
}
export interface KernelInfo {
  name: string;          // canonical C++ spelling, e.g. "transpose<float, 16>"
  symbol: string;
  params: Param[];
  block: [number, number, number];
  sharedBytes: number;
  targets: TargetName[];
  usesBarrier: boolean;
}
export interface ImageInfo {
  target: TargetName;
  arch: string;
  offset: bigint;
  size: bigint;
  rawSize: bigint;
  checksum: bigint;
  kernels: string[];
}
export interface Manifest {
  compilerVersion: string;
  sourceHash: string;
  kernels: KernelInfo[];
  images: ImageInfo[];
}
export interface Header {
  major: number;
  minor: number;
  headerSize: number;
  fileSize: bigint;
  manifestOffset: bigint;
  manifestSize: bigint;
  manifestChecksum: bigint;
  headerChecksum: bigint;
  flags: number;
}

export class FatBinary {
  /** Parses and verifies a .qfb like the C++ reader; throws QfbError('InvalidFatBinary'). */
  static parse(bytes: Uint8Array | ArrayBuffer, label?: string): FatBinary;
  /** Node only: reads and parses a file (QfbError('NotFound') when it cannot be opened). */
  static readFile(path: string): Promise<FatBinary>;
  readonly bytes: Uint8Array;
  readonly label: string;
  readonly header: Header;
  readonly manifest: Manifest;
  findKernel(name: string): KernelInfo | null;
  /** Index of the first image of `target` (and `arch`), or -1. */
  findImage(target: TargetName, arch?: string): number;
  /** Checksum, zstd frame and content checks, then the decompressed image. */
  imageData(index: number): Uint8Array;
}
export function parseManifest(bytes: Uint8Array, label: string, skipUnknownTargets?: boolean): Manifest;
export function fnv1a64(bytes: Uint8Array): bigint;
export function checksumHex(value: bigint): string;
export function xxh64(bytes: Uint8Array): bigint;
export const LIMITS: Readonly<Record<string, number>>;
export const SCALAR_TYPES: Readonly<Record<ScalarTypeName, number>>;

export interface WgslUnit {
  entry: string;
  features: string[];   // WebGPU features the unit needs ([] or ['subgroups'])
  bindings: { index: number; kind: 'read' | 'read_write' | 'uniform' }[];
  source: string;
}
export function parseWgslImage(text: string, label: string): Map<string, WgslUnit[]>;

/** A scalar argument: a number (or boolean for bool); for half/bf16 also the bits. */
export type ScalarArg = number | bigint | boolean | { bits: number };   // bigint (or a safe-integer number) for int64_t / uint64_t
export type Grid = number | [number] | [number, number] | [number, number, number];

export class Kernel {
  readonly manifest: KernelInfo;
  readonly unit: WgslUnit;
  readonly pipeline: GPUComputePipeline;
  /** Checks the arguments against the manifest, then encodes and submits one dispatch. */
  launch(grid: Grid, args: (GPUBuffer | ScalarArg)[]): void;
}
export class Module {
  /** The fat binary's WGSL image; `features` limits the units chosen ([]: portable units). */
  static load(device: GPUDevice, fatbin: FatBinary, options?: { features?: string[] }): Module;
  readonly device: GPUDevice;
  readonly fatbin: FatBinary;
  unitFor(symbol: string): WgslUnit | null;
  /** Compiles (once) the kernel named `name`; QfbError('CompileError') with Dawn's messages. */
  kernel(name: string): Promise<Kernel>;
}

/** Node: Dawn through the `webgpu` package; options default to QUIVER_WEBGPU_OPTIONS. */
export function nodeGpu(options?: string[]): Promise<GPU>;
export function requestDevice(gpu?: GPU, options?: { compatibility?: boolean }): Promise<{ adapter: GPUAdapter; device: GPUDevice }>;
export function createBuffer(device: GPUDevice, byteLength: number, extraUsage?: number): GPUBuffer;
export function upload(device: GPUDevice, data: ArrayBufferView): GPUBuffer;
export function download(device: GPUDevice, buffer: GPUBuffer, byteLength: number): Promise<Uint8Array>;
export function f32ToF16Bits(x: number): number;
export function f32ToBf16Bits(x: number): number;
