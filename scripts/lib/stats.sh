# shellcheck shell=bash
# scripts/lib/stats.sh — the statistics every GPU script prints, written once. Source it:
#     . "$(dirname "$0")/lib/stats.sh"
#
# median VALUE…    the median of the numbers given (the mean of the middle two when their count is
#                  even); empty arguments are skipped; prints nothing when none is left.
# STATS_AWK        awk functions to put in front of an awk program ("$STATS_AWK"'…program…'):
#                  median(list) of a space-separated list ("" when empty) and range(list), its
#                  "lo–hi" ("-" when empty).

median() {
    [ $# -gt 0 ] || return 0
    printf '%s\n' "$@" | awk 'NF' | sort -g |
        awk '{ v[NR] = $1 } END { if (NR) print ((NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

# shellcheck disable=SC2016 # awk's own variables, not the shell's
STATS_AWK='
function median(list,    n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
    if (n == 0) return ""
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function range(list,    n, a, i, lo, hi) {
    n = split(list, a, " ")
    if (n == 0) return "-"
    lo = hi = a[1]
    for (i = 2; i <= n; i++) { if (a[i] + 0 < lo + 0) lo = a[i]; if (a[i] + 0 > hi + 0) hi = a[i] }
    return lo "–" hi
}
'
