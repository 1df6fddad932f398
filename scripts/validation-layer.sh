# shellcheck shell=bash
# scripts/validation-layer.sh — source it: run any Vulkan program under the Khronos validation
# layer and count what the layer reported, without touching the program's own stdout and stderr.
# Used by scripts/gpu-check.sh (the crate's examples on the GPU) and .ci/run (the same examples on
# lavapipe). Needs bash, grep.
#
#   vl_env BASE          sets the array VL_ENV: the environment that loads the layer for one run,
#                        with a settings file BASE.vk_layer_settings.txt that sends every message
#                        (errors, warnings, performance warnings and information) to BASE.validation.log
#                        and turns off the layer's shader validation cache (a file of its own under
#                        $XDG_CACHE_HOME, $TMPDIR or /tmp: shaders are validated all the same, only
#                        not remembered between runs)
#   env "${VL_ENV[@]}" PROGRAM ARGS...
#   vl_check BASE        after the run: sets VL_SUMMARY to one line and returns 0 only if the layer
#                        loaded (its "Khronos Validation Layer Active" message, sent at
#                        vkCreateInstance, is in the log) and reported nothing else
#   vl_check BASE maybe  the same, but a program that ended before creating a Vulkan instance (no
#                        log at all) passes with "no Vulkan instance"
#   VL_FOREIGN=1 vl_check BASE   counts apart the four VUIDs the layer reports when CUDA signals an
#                        imported semaphore it cannot see (as the app's --validation does)
#
# The layer's messages about its own environment (VL_LAYER_ENV_IDS: it could not read, write or
# hold its shader validation cache, e.g. UNASSIGNED-cache-file-error "Cannot open shader
# validation cache at … for reading (it may not exist yet)", which a fresh machine or an
# unwritable cache directory draws) are no message of the program: vl_check counts them apart and
# lists them in VL_SUMMARY; they do not fail it. Every other message does.
#
# A layer that is not installed, or not found, leaves no status message: vl_check fails then, it
# does not pass for want of messages.

# VL_ENV and VL_SUMMARY are read by the scripts that source this one.
# shellcheck disable=SC2034

vl_env() {
    local base=$1
    rm -f "$base.validation.log"
    {
        echo "khronos_validation.report_flags = error,warn,perf,info"
        echo "khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG"
        echo "khronos_validation.log_filename = $base.validation.log"
        echo "khronos_validation.disables = VK_VALIDATION_FEATURE_DISABLE_SHADER_VALIDATION_CACHE_EXT"
    } >"$base.vk_layer_settings.txt"
    VL_ENV=(VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation "VK_LAYER_SETTINGS_PATH=$base.vk_layer_settings.txt")
}

# The ids of the layer's messages about its own environment (its shader validation cache file).
VL_LAYER_ENV_IDS='^UNASSIGNED-cache-(file|write|memory)-error$'

vl_check() {
    local log=$1.validation.log
    if [ ! -e "$log" ]; then
        if [ "${2:-}" = maybe ]; then
            VL_SUMMARY="no Vulkan instance (ended before it), nothing to validate"
            return 0
        fi
        VL_SUMMARY="the validation layer did not load (no $log)"
        return 1
    fi
    if ! grep -q "UNASSIGNED-khronos-validation-createinstance-status-message" "$log"; then
        VL_SUMMARY="the validation layer did not load (no status message in $log)"
        return 1
    fi
    # One "<id>(<SEVERITY> / <TYPE>): msgNum: …" per message (not always at a line start); every
    # message but the status one counts, information included.
    local found n ids
    found=$(grep -oE '[A-Za-z0-9_.-]+\([A-Z]+ / [A-Z]+\): msgNum:' "$log" | sed 's/(.*//' |
        grep -v '^UNASSIGNED-khronos-validation-createinstance-status-message$')
    # VL_FOREIGN=1: the four VUIDs the 1.3.239 layer reports because it cannot see a CUDA signal
    # of an imported semaphore (src/vk/instance.rs, FOREIGN_SIGNAL_VUIDS: it then believes the
    # submissions behind that wait never ran) are counted apart, as the app's --validation does.
    local foreign=0
    if [ "${VL_FOREIGN:-0}" = 1 ]; then
        local pattern='^VUID-(VkSemaphoreSignalInfo-value-03259|vkQueueSubmit-pCommandBuffers-00071|vkResetCommandBuffer-commandBuffer-00045|vkBeginCommandBuffer-commandBuffer-00049)$'
        foreign=$(printf '%s\n' "$found" | grep -cE "$pattern" || true)
        found=$(printf '%s\n' "$found" | grep -vE "$pattern" || true)
    fi
    # The layer's own environment (its cache file): listed, not counted as the program's.
    local layer_env layer_env_ids
    layer_env=$(printf '%s\n' "$found" | grep -cE "$VL_LAYER_ENV_IDS" || true)
    layer_env_ids=$(printf '%s\n' "$found" | grep -E "$VL_LAYER_ENV_IDS" | sort | uniq -c | awk '{printf " %s x%s", $2, $1}')
    found=$(printf '%s\n' "$found" | grep -vE "$VL_LAYER_ENV_IDS" || true)
    n=$(printf '%s' "$found" | grep -c .)
    ids=$(printf '%s\n' "$found" | grep . | sort | uniq -c | awk '{printf " %s x%s", $2, $1}')
    local apart=""
    if [ "$layer_env" -ne 0 ]; then
        apart=" (and $layer_env about the layer's own environment, not the program:$layer_env_ids)"
    fi
    if [ "$n" -ne 0 ]; then
        VL_SUMMARY="layer loaded, $n validation messages:$ids$apart (see $log)"
        return 1
    fi
    VL_SUMMARY="layer loaded, 0 validation messages$apart"
    if [ "$foreign" -ne 0 ]; then
        VL_SUMMARY+=" (and $foreign known false positives from foreign semaphore signals)"
    fi
    return 0
}
