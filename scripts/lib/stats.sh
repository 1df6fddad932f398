# shellcheck shell=bash
# scripts/lib/stats.sh — the statistics every GPU script prints, written once. Source it:
#     . "$(dirname "$0")/lib/stats.sh"
#
# median VALUE…    the median of the numbers given (the mean of the middle two when their count is
#                  even); empty arguments are skipped; prints nothing when none is left.
# STATS_AWK        awk functions to put in front of an awk program ("$STATS_AWK"'…program…'):
#                  median(list) of a space-separated list ("" when empty), range(list), its
#                  "lo–hi" ("-" when empty), and mean_ci95(list): "mean lo hi", the mean and its
#                  95% confidence interval (Student's t, n − 1 degrees of freedom; "" with fewer
#                  than 2 values).

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
function mean_ci95(list,    n, a, i, sum, m, ss, t, half) {
    n = split(list, a, " ")
    if (n < 2) return ""
    for (i = 1; i <= n; i++) sum += a[i]
    m = sum / n
    for (i = 1; i <= n; i++) ss += (a[i] - m) ^ 2
    # two-sided 95% quantiles of t for 1..30 degrees of freedom; beyond, 1.96 + 2.4 / df
    split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160 2.145 2.131 2.120 2.110 2.101 2.093 2.086 2.080 2.074 2.069 2.064 2.060 2.056 2.052 2.048 2.045 2.042", tq, " ")
    t = (n - 1 <= 30) ? tq[n - 1] : 1.96 + 2.4 / (n - 1)
    half = t * sqrt(ss / (n - 1)) / sqrt(n)
    return m " " (m - half) " " (m + half)
}
'
