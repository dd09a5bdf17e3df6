# fetch_server: the pinned llama-server of the build pick_build chose, fetched into the cache once
# (SHA-256 checked while streaming); sets `cache` (its folder) and exports LD_LIBRARY_PATH.
# stop_server: TERM the llama-server in `server_pid` (started by the job), KILL it after 10 s,
# reap it and clear `server_pid`. Shared by compare.sh and bench.sh (POSIX sh).

fetch_server() {
    cache=$OVERBRAINER_CACHE/llama.cpp/$TAG/$ASSET
    url=$OVERBRAINER_LLAMA_CPP_URL
    url=${url%/}
    if [ ! -x "$cache/llama-server" ]; then
        mkdir -p "$OVERBRAINER_CACHE/llama.cpp/$TAG" || fail "cannot create $OVERBRAINER_CACHE/llama.cpp/$TAG"
        archive=$OVERBRAINER_CACHE/llama.cpp/$TAG/llama-$TAG-bin-$ASSET.tar.gz
        say "fetching llama-server of llama.cpp $TAG ($ASSET)"
        fetch "$url/releases/download/$TAG/llama-$TAG-bin-$ASSET.tar.gz" "$DIGEST" "$archive"
        unpack "$archive" "llama-$TAG" "$cache"
        rm -f "$archive"
    fi
    libs=$cache
    if [ -n "$CUDART" ]; then
        cudart=$OVERBRAINER_CACHE/llama.cpp/$TAG/$CUDART
        if [ ! -e "$cudart/libcudart.so.13" ]; then
            archive=$cudart.tar.gz
            fetch "$url/releases/download/$TAG/$CUDART.tar.gz" "$CUDART_DIGEST" "$archive"
            unpack "$archive" "llama-$TAG" "$cudart"
            rm -f "$archive"
        fi
        libs=$cudart:$cache
    fi
    LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export LD_LIBRARY_PATH
}

stop_server() {
    if [ -n "$server_pid" ]; then
        kill -TERM "$server_pid" 2>/dev/null
        _polls=0
        while kill -0 "$server_pid" 2>/dev/null && [ "$_polls" -lt 50 ]; do
            sleep 0.2
            _polls=$((_polls + 1))
        done
        kill -KILL "$server_pid" 2>/dev/null
        wait "$server_pid" 2>/dev/null
        server_pid=
    fi
}
