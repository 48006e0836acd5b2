# Reads multi_ab.sh's "ab BINARY SHAPE T ms rel-err correct" lines and
# prints, per case (SHAPE T, in the order first seen) and binary (in the
# order of `bins`, a space-separated list, -v bins="..."), the mean over
# its rounds and its ratio to the first binary's mean:
#   mean BINARY SHAPE T ms ratio xROUNDS[ NOT-CORRECT]
# NOT-CORRECT where any round did not say "yes"; ratio "-" where the first
# binary has no figure for the case. Other lines, and rows whose ms is not
# a positive number, are ignored.
$1 == "ab" && NF >= 7 && $5 ~ /^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/ && $5 + 0 > 0 {
  key = $3 " " $4
  sum[$2 SUBSEP key] += $5
  n[$2 SUBSEP key]++
  if ($7 != "yes")
    bad[$2 SUBSEP key] = 1
  if (!(key in seen)) {
    seen[key] = 1
    order[++cases] = key
  }
}
END {
  nb = split(bins, b, " ")
  for (c = 1; c <= cases; c++)
    for (i = 1; i <= nb; i++) {
      k = b[i] SUBSEP order[c]
      k0 = b[1] SUBSEP order[c]
      if (!(k in n))
        continue
      m = sum[k] / n[k]
      ratio = "-"
      if (k0 in n)
        ratio = sprintf("%.3f", m / (sum[k0] / n[k0]))
      flag = ""
      if (k in bad)
        flag = " NOT-CORRECT"
      printf "mean %s %s %.4f %s x%d%s\n", b[i], order[c], m, ratio, n[k], flag
    }
}
