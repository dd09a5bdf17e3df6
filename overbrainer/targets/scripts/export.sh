# export.sh: the export job (spec §B.3), run in the job's directory on the target. The shared
# helpers (llama_cpp.sh) are prepended when the script is written. Environment:
# OVERBRAINER_EXPORT_NAME, OVERBRAINER_EXPORT_QUANTIZE, OVERBRAINER_EXPORT_MODEL,
# OVERBRAINER_EXPORT_CONFIG, OVERBRAINER_CACHE and the OVERBRAINER_LLAMA_CPP* pin;
# OVERBRAINER_EXPORT_BASE=1 when the model is the run's base model (a directory or a Hub ID),
# whose download reads HF_TOKEN, HF_HOME and HF_ENDPOINT from the environment like training.

name="$OVERBRAINER_EXPORT_NAME"
quant="$OVERBRAINER_EXPORT_QUANTIZE"
model="$OVERBRAINER_EXPORT_MODEL"
config="$OVERBRAINER_EXPORT_CONFIG"
tag="$OVERBRAINER_LLAMA_CPP"
url="${OVERBRAINER_LLAMA_CPP_URL%/}"
cache="$OVERBRAINER_CACHE/llama.cpp/$tag"
work=export-work
target="output/gguf/$name-$quant.gguf"

cleanup() {
    rm -rf "$work" "$target.part"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

rm -rf "$work" "$target.part"
mkdir -p "$work" output/gguf "$cache" || fail "cannot create $work, output/gguf or $cache"

# 1. The Hugging Face model to convert: the run's base model (a directory on the target, or a
#    Hub ID downloaded into the target's Hugging Face cache), a merged model, an adapter to
#    merge, or a full model.
if [ "${OVERBRAINER_EXPORT_BASE:-}" = 1 ]; then
    if [ -f "$model/config.json" ]; then
        hf="$model"
    else
        found="$(python3 -c 'import importlib.util as u
print("yes" if u.find_spec("huggingface_hub") else "")')" || fail "python3 cannot run"
        [ -n "$found" ] || fail "python3 lacks huggingface_hub, which the download of the base model $model needs"
        say "fetching the base model $model from the Hugging Face Hub (files in its cache are reused)"
        HF_HUB_DISABLE_PROGRESS_BARS=1 python3 - "$model" "$work/base-model" "$SCRIPT_NAME" <<'PYHUB' || exit 1
import sys

from huggingface_hub import snapshot_download

repo, out, prefix = sys.argv[1:4]
# Formats the converter never reads: other runtimes' exports and original checkpoints.
SKIP = ["*.gguf", "*.onnx", "*.onnx_data", "*.h5", "*.msgpack", "*.ot", "*.tflite", "original/*"]
try:
    folder = snapshot_download(repo, ignore_patterns=SKIP)
except Exception as error:  # noqa: BLE001 (any failure ends the download with one line)
    why = " ".join(str(error).split()) or type(error).__name__
    sys.exit(f"{prefix}: cannot download the base model {repo} from the Hugging Face Hub: {why}")
with open(out, "w", encoding="utf-8") as file:
    file.write(folder)
PYHUB
        hf="$(cat "$work/base-model")" || fail "cannot read $work/base-model"
        [ -f "$hf/config.json" ] || fail "the base model $model has no config.json"
    fi
elif [ -f "$model/merged/config.json" ]; then
    hf="$model/merged"
elif [ -f "$model/adapter_config.json" ]; then
    python3 - "$config" "$work" "$model" <<'PYMERGE' || fail "cannot write $work/merge.yaml from $config"
import sys

import yaml

source, work, model = sys.argv[1:4]
with open(source, encoding="utf-8") as file:
    config = yaml.safe_load(file) or {}
for key in ("plugins", "resume_from_checkpoint", "hub_model_id", "hub_strategy"):
    config.pop(key, None)
config["output_dir"] = work
config["lora_model_dir"] = model
with open(f"{work}/merge.yaml", "w", encoding="utf-8") as file:
    yaml.safe_dump(config, file, sort_keys=False)
PYMERGE
    say "merging the adapter in $model into its base model"
    axolotl merge-lora "$work/merge.yaml" || fail "axolotl merge-lora failed"
    [ -f "$work/merged/config.json" ] || fail "axolotl merge-lora left no $work/merged/config.json"
    hf="$work/merged"
elif [ -f "$model/config.json" ]; then
    hf="$model"
else
    fail "$model holds neither an adapter nor a model"
fi

# 2. The llama.cpp source (converter and gguf-py), fetched and verified once per tag.
source_dir="$cache/source"
if [ ! -f "$source_dir/convert_hf_to_gguf.py" ]; then
    say "fetching the llama.cpp $tag source"
    fetch "$url/archive/refs/tags/$tag.tar.gz" "$OVERBRAINER_LLAMA_CPP_SOURCE_SHA256" "$cache/source.tar.gz"
    unpack "$cache/source.tar.gz" "llama.cpp-$tag" "$source_dir"
    rm -f "$cache/source.tar.gz"
fi

# 3. llama-quantize, unless the target type is the converter's own.
quantizer=""
case "$quant" in
F16 | BF16) ;;
*)
    platform="$(uname -sm)"
    case "$platform" in
    "Linux x86_64") asset=ubuntu-x64 sha="$OVERBRAINER_LLAMA_CPP_UBUNTU_X64_SHA256" ;;
    "Linux aarch64") asset=ubuntu-arm64 sha="$OVERBRAINER_LLAMA_CPP_UBUNTU_ARM64_SHA256" ;;
    "Darwin arm64") asset=macos-arm64 sha="$OVERBRAINER_LLAMA_CPP_MACOS_ARM64_SHA256" ;;
    *) fail "llama.cpp $tag has no prebuilt llama-quantize for $platform (Linux x86_64, Linux aarch64 and Darwin arm64 only)" ;;
    esac
    bin_dir="$cache/$asset"
    if [ ! -x "$bin_dir/llama-quantize" ]; then
        say "fetching llama.cpp $tag $asset"
        fetch "$url/releases/download/$tag/llama-$tag-bin-$asset.tar.gz" "$sha" "$cache/$asset.tar.gz"
        unpack "$cache/$asset.tar.gz" "llama-$tag" "$bin_dir"
        rm -f "$cache/$asset.tar.gz"
    fi
    quantizer="$bin_dir/llama-quantize"
    ;;
esac

# 4. The Python modules the converter needs.
missing="$(python3 -c 'import importlib.util as u
print(" ".join(m for m in ("torch", "numpy", "transformers", "yaml") if u.find_spec(m) is None))')" ||
    fail "python3 cannot run"
[ -z "$missing" ] || fail "python3 lacks the modules the conversion needs: $missing"

# 5. Convert (then quantize) into <target>.part, then rename.
case "$quant" in
F16) outtype=f16 out="$target.part" ;;
BF16) outtype=bf16 out="$target.part" ;;
*) outtype=auto out="$work/model.gguf" ;;
esac
say "converting $hf to GGUF ($outtype)"
PYTHONPATH="$source_dir/gguf-py${PYTHONPATH:+:$PYTHONPATH}" python3 "$source_dir/convert_hf_to_gguf.py" \
    "$hf" --outtype "$outtype" --outfile "$out" || fail "convert_hf_to_gguf.py failed"
if [ -n "$quantizer" ]; then
    say "quantizing to $quant"
    LD_LIBRARY_PATH="$bin_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$quantizer" "$work/model.gguf" "$target.part" "$quant" || fail "llama-quantize failed"
fi
mv -f "$target.part" "$target" || fail "cannot rename $target.part"
say "wrote $target"
