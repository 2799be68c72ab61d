/**
 * Where native TensorFlow comes from: the libtensorflow that tfjs-node's binding links against is
 * taken from PyPI's TensorFlow wheels (a wheel is a zip; its C API library needs nothing from
 * Python), since the tfjs-node install script's own download site cannot be reached from every
 * machine. The GPU variant adds NVIDIA's CUDA 12 wheels that the TensorFlow wheel's `and-cuda`
 * extra pins; they are fetched on the user's machine, never redistributed.
 */

/** One file on PyPI, pinned. */
export interface PinnedWheel {
  /** Distribution name on PyPI. */
  name: string;
  version: string;
  url: string;
  /** sha256 of the wheel, hex. */
  sha256: string;
  bytes: number;
}

/** `cpu`: @tensorflow/tfjs-node on tensorflow-cpu. `gpu`: @tensorflow/tfjs-node-gpu on tensorflow (CUDA 12) and the NVIDIA wheels. */
export type NativeVariant = 'cpu' | 'gpu';

/** What one variant is built from. */
export interface NativeDist {
  variant: NativeVariant;
  /** The npm package whose binding is built (an optional dependency, installed without its script). */
  npmPackage: string;
  tensorflow: PinnedWheel;
  /** Libraries the wheels add under `nvidia/<name>/lib`, found by libtensorflow's RUNPATH. @default [] */
  cuda: readonly PinnedWheel[];
}

/** The version of tfjs-node (and tfjs) the binding is built for. */
export const TFJS_NODE_VERSION = '4.22.0';
/** The TensorFlow whose C API the binding is built on. */
export const TENSORFLOW_VERSION = '2.16.1';

const pypi = (path: string): string => `https://files.pythonhosted.org/packages/${path}`;

const nvidia = (name: string, version: string, path: string, sha256: string, bytes: number): PinnedWheel => ({
  name,
  version,
  url: pypi(`${path}/${name.replace(/-/g, '_')}-${version}-py3-none-manylinux1_x86_64.whl`),
  sha256,
  bytes,
});

/** The pinned distributions, Linux x86_64. */
export const NATIVE_DISTS: Readonly<Record<NativeVariant, NativeDist>> = {
  cpu: {
    variant: 'cpu',
    npmPackage: '@tensorflow/tfjs-node',
    tensorflow: {
      name: 'tensorflow-cpu',
      version: TENSORFLOW_VERSION,
      url: pypi(
        '9b/0b/c18d6464a19d4c9b63df8880dd3ce0c67b5145ada9092f3ac67d82726566/tensorflow_cpu-2.16.1-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl',
      ),
      sha256: '8fde4a1a1515f3099119c2d71e1653aa6e7ae81ec58b7cb045cab5e5bb147b8b',
      bytes: 214_055_661,
    },
    cuda: [],
  },
  gpu: {
    variant: 'gpu',
    npmPackage: '@tensorflow/tfjs-node-gpu',
    tensorflow: {
      name: 'tensorflow',
      version: TENSORFLOW_VERSION,
      url: pypi(
        '58/70/e8ac764ec80810eefcbab0cb1d21dbba6cf26719c44cd6d9a5e9f0407935/tensorflow-2.16.1-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl',
      ),
      sha256: '930c61100cce3a5cb63d30fe6776504405214e8398a26ca968222ecb8b8f9404',
      bytes: 589_831_274,
    },
    // tensorflow 2.16.1's `and-cuda` extra, version for version.
    cuda: [
      nvidia(
        'nvidia-cublas-cu12',
        '12.3.4.1',
        '74/aa/f0e402ab0c1aa371e3143ed0b79744ebd6091307087cda59e3249f45cac8',
        '9b25b27bd5a5be1cc7e83a7b8004258daa338800798e22986e5b67ee06f0859d',
        412_581_912,
      ),
      nvidia(
        'nvidia-cuda-cupti-cu12',
        '12.3.101',
        '6a/43/b30e742c204c5c81a6954c5f20ce82b098f9c4ca3d3cb76eea5476b83f5d',
        '7b984288af7db1faa1e6f1803db075d4350116b72a98d4be0e88d604dc812c0e',
        13_978_802,
      ),
      nvidia(
        'nvidia-cuda-nvcc-cu12',
        '12.3.107',
        '4a/d9/352879c1d749b787b5c068b32673a73ce1cb6c52874b1d2e80044b101485',
        'a3344b94f5e89023fa17e0bbf8fb0dd26d5ef6f4091a5aab08f215e4999eac62',
        21_955_316,
      ),
      nvidia(
        'nvidia-cuda-nvrtc-cu12',
        '12.3.107',
        '0b/dd/c510983b0fb66b7346432e1f25afbfd9446a86ccdbfacb600351aa8e09d6',
        '4db66788a37a234304a0b3203744f9a6c665f48bde65f69a096ae3b5799b5b1d',
        24_875_439,
      ),
      nvidia(
        'nvidia-cuda-runtime-cu12',
        '12.3.101',
        '48/ff/45901ba952404bc6efd0a792cabefeb1ba622610108c0f5d6b7a4686f1c1',
        '04604679ddca6acb96c76a7a9306282cddc16981f92e148e2dfe227078883cda',
        867_700,
      ),
      nvidia(
        'nvidia-cudnn-cu12',
        '8.9.7.29',
        '79/fb/8071b1c82db9b38dccbd11dfaa16aaa4b239d2deff5af711d8b01467554f',
        'adf4f59ed7a1341103822ed8df6e144f4d47ea8b10d9bf0ea0047ba738fd7b02',
        704_741_186,
      ),
      nvidia(
        'nvidia-cufft-cu12',
        '11.0.12.1',
        'bc/51/a56eea38a13f8727c0f5a6e39677e588dc1488c3bfae4c944aa4c23f02ae',
        '3b2c85d24d7dcc578720fdf39e2823950b5857e85164c3c1dc97184a8a8e0398',
        98_790_531,
      ),
      nvidia(
        'nvidia-curand-cu12',
        '10.3.4.107',
        '3d/f8/d4139976f26861825b73cf8b791ffe0fb70a5fef502c91fb22258bd2b5f8',
        'd798db82ae445cf1d8bf6af9ca3bd6bb6cc87753c229a441cf8d2597b09332e5',
        56_330_780,
      ),
      nvidia(
        'nvidia-cusolver-cu12',
        '11.5.4.101',
        '04/70/79f0033d97e6025e386898d129dcaccee4d222b09cfa8d313db94a605462',
        '783a3279553feaf8e47af12cab1fa769ffd5e644ea876db3dc2252f35f9bf256',
        125_182_212,
      ),
      nvidia(
        'nvidia-cusparse-cu12',
        '12.2.0.103',
        '54/aa/db44573b6159a104e15d372e3739ad76bc036dee80f1fe6ba4618f476986',
        'fe9e17daf406c98c28fbc8bcf785ecd4db301bf02ce626de6aa1046de66f84bd',
        197_492_558,
      ),
      nvidia(
        'nvidia-nccl-cu12',
        '2.19.3',
        '38/00/d0d4e48aef772ad5aebcf70b73028f88db6e5640b36c38e90445b7a57c45',
        'a9734707a2c96443331c1e48c717024aa6678a0e2a4cb66b2c364d18cee6b48d',
        165_987_969,
      ),
      nvidia(
        'nvidia-nvjitlink-cu12',
        '12.3.101',
        '1e/07/bf730d44c2fe1b676ad9cc2be5f5f861eb5d153fb6951987a2d6a96379a9',
        '64335a8088e2b9d196ae8665430bc6a2b7e6ef2eb877a9c735c804bd4ff6467c',
        20_544_772,
      ),
    ],
  },
};
