# pick_build: which prebuilt llama-server of the pinned llama.cpp serves the child (POSIX sh).
# Sets ASSET, DIGEST, and for CUDA builds CUDART and CUDART_DIGEST. Each fallback to the CPU
# build says why in exactly one `compare: warning:` line (`bench: warning:` in a bench).

warn() {
    printf '%s: warning: %s\n' "${SCRIPT_NAME:-compare}" "$*" >&2
}

# version_below A B: whether version A (X.Y) is below version B.
version_below() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        split(a, x, "."); split(b, y, ".");
        exit !((x[1] + 0 < y[1] + 0) || (x[1] + 0 == y[1] + 0 && x[2] + 0 < y[2] + 0)) }'
}

glibc_version() {
    _glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ print $2 }')
    [ -n "$_glibc" ] || _glibc=$(ldd --version 2>/dev/null | head -n 1 | awk '{ print $NF }')
    printf '%s' "$_glibc"
}

# gpu_glibc_ok GPU_ASSET: the GPU builds need glibc 2.38; an unknown glibc is given the chance.
gpu_glibc_ok() {
    _have=$(glibc_version)
    case "$_have" in
        [0-9]*.[0-9]*) ;;
        *) return 0 ;;
    esac
    if version_below "$_have" "$LLAMA_CPP_GPU_GLIBC"; then
        warn "glibc $_have is older than the glibc $LLAMA_CPP_GPU_GLIBC the $1 build needs: using the CPU build $ASSET"
        return 1
    fi
    return 0
}

pick_build() {
    TAG=$OVERBRAINER_LLAMA_CPP
    LLAMA_CPP_GPU_GLIBC=2.38
    CUDART=
    CUDART_DIGEST=
    _platform=$(uname -sm)
    case "$_platform" in
        "Linux x86_64")
            _arch=x64 ASSET=ubuntu-x64 DIGEST=$OVERBRAINER_LLAMA_CPP_UBUNTU_X64_SHA256 ;;
        "Linux aarch64")
            _arch=arm64 ASSET=ubuntu-arm64 DIGEST=$OVERBRAINER_LLAMA_CPP_UBUNTU_ARM64_SHA256 ;;
        "Darwin arm64")
            ASSET=macos-arm64 DIGEST=$OVERBRAINER_LLAMA_CPP_MACOS_ARM64_SHA256
            return 0 ;;
        *)
            fail "llama.cpp $TAG has no prebuilt llama-server for $_platform (Linux x86_64, Linux aarch64 and Darwin arm64 only)" ;;
    esac
    _cuda=$OVERBRAINER_LLAMA_CPP_CUDA
    if _smi=$(nvidia-smi 2>/dev/null); then
        _driver=$(printf '%s\n' "$_smi" | sed -n 's/.*CUDA Version: *\([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -n 1)
        if [ -z "$_driver" ]; then
            warn "nvidia-smi shows no CUDA version: using the CPU build $ASSET"
            return 0
        fi
        if [ "${_driver%%.*}" -lt "${_cuda%%.*}" ]; then
            warn "the NVIDIA driver supports CUDA $_driver, below the CUDA $_cuda of llama.cpp $TAG: using the CPU build $ASSET"
            return 0
        fi
        _gpu=ubuntu-cuda-$_cuda-$_arch
        gpu_glibc_ok "$_gpu" || return 0
        ASSET=$_gpu
        CUDART=cudart-llama-$TAG-bin-ubuntu-cuda-$_cuda-$_arch
        if [ "$_arch" = x64 ]; then
            DIGEST=$OVERBRAINER_LLAMA_CPP_UBUNTU_CUDA_X64_SHA256
            CUDART_DIGEST=$OVERBRAINER_LLAMA_CPP_CUDART_X64_SHA256
        else
            DIGEST=$OVERBRAINER_LLAMA_CPP_UBUNTU_CUDA_ARM64_SHA256
            CUDART_DIGEST=$OVERBRAINER_LLAMA_CPP_CUDART_ARM64_SHA256
        fi
        return 0
    fi
    _kfd=${OVERBRAINER_COMPARE_KFD:-/dev/kfd}
    [ -e "$_kfd" ] || return 0
    if [ "$_arch" = arm64 ]; then
        warn "an AMD GPU is present, but llama.cpp $TAG has no ROCm build for arm64: using the CPU build $ASSET"
        return 0
    fi
    _libs=$(ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null)
    _missing=
    _packages=
    for _pair in libamdhip64.so.7:libamdhip64-7 librocblas.so.5:librocblas5 libhipblas.so.3:libhipblas3; do
        case "$_libs" in
            *"${_pair%%:*}"*) ;;
            *) _missing="$_missing ${_pair%%:*}" _packages="$_packages ${_pair#*:}" ;;
        esac
    done
    if [ -n "$_missing" ]; then
        warn "an AMD GPU is present, but ROCm lacks$_missing: using the CPU build $ASSET. On Ubuntu: apt install$_packages"
        return 0
    fi
    if [ ! -r "$_kfd" ] || [ ! -w "$_kfd" ]; then
        warn "$_kfd is not readable and writable by this user (add it to the render group): using the CPU build $ASSET"
        return 0
    fi
    _gpu=ubuntu-rocm-$OVERBRAINER_LLAMA_CPP_ROCM-x64
    gpu_glibc_ok "$_gpu" || return 0
    ASSET=$_gpu
    DIGEST=$OVERBRAINER_LLAMA_CPP_UBUNTU_ROCM_X64_SHA256
    return 0
}
