// The blocked layout of GEMM2's partial rows (moejit_abi::partial_block_offset),
// which the GEMM2 epilogue writes and the combine reads: every (row, column)
// of a [T*k, H] result gets its own element inside the room the workspace
// gives partial, and the rows a consumer warpgroup stores are at most two
// runs.
#include "runtime/launch_params.h"

#include <gtest/gtest.h>

#include <vector>

using namespace moejit_abi;

TEST(PartialLayout, EveryElementHasItsOwnPlaceInsideTheRoom) {
  for (int hidden : {64, 264, 2048, 2056})
    for (int bn = 64; bn <= 256; bn += 64) {
      ASSERT_TRUE(blocks_partial(bn));
      for (long long rows : {1LL, 64LL, 70LL}) {
        const long long room = partial_rows(rows) * partial_columns(hidden);
        std::vector<int> seen(static_cast<size_t>(room), 0);
        for (long long r = 0; r < rows; ++r)
          for (int c = 0; c < hidden; ++c) {
            const long long at = partial_block_offset(r, c, hidden, bn);
            ASSERT_GE(at, 0);
            ASSERT_LT(at, room) << "H=" << hidden << " bn=" << bn << " row " << r << " col " << c;
            ASSERT_EQ(seen[static_cast<size_t>(at)]++, 0)
                << "H=" << hidden << " bn=" << bn << " row " << r << " col " << c;
          }
      }
    }
}

// A warpgroup's rows r0..r0+63 of a column tile lie in two runs split at
// the next multiple of 64 rows, each starting at partial_block_row of its
// first row; a 16-byte chunk (8 columns from a multiple of 8) stays whole
// (the combine's vector loads read one), and a row's pieces lie within its
// group of 64 rows.
TEST(PartialLayout, AWarpgroupsRowsAreTwoRunsAtMostAndChunksStayWhole) {
  const int hidden = 2048;
  for (int bn = 64; bn <= 256; bn += 64)
    for (long long r0 : {0LL, 5LL, 129LL}) {
      const int n0 = bn; // the second column tile
      const long long split = (r0 / kPartialGroupRows + 1) * kPartialGroupRows;
      for (long long r = r0; r < r0 + 64; ++r) {
        const long long run = r < split ? r0 : split;
        const long long start = partial_block_row(run, n0, hidden, bn);
        const long long length = r < split ? split - r0 : r0 + 64 - split;
        for (int c = n0; c < n0 + bn; c += kPartialChunk) {
          const long long at = partial_block_offset(r, c, hidden, bn);
          EXPECT_EQ((at - start) / bn, r - run) << "bn=" << bn << " row " << r;
          EXPECT_LT(at, start + length * bn);
          EXPECT_EQ(at % kPartialChunk, 0);
          for (int e = 1; e < kPartialChunk; ++e)
            EXPECT_EQ(partial_block_offset(r, c + e, hidden, bn), at + e);
        }
        const long long span = kPartialGroupRows * ((hidden + bn - 1) / bn * bn); // a group's
        const long long group = r / kPartialGroupRows * span;
        EXPECT_GE(partial_block_offset(r, 0, hidden, bn), group);
        EXPECT_LT(partial_block_offset(r, hidden - 1, hidden, bn), group + span);
      }
    }
  EXPECT_FALSE(blocks_partial(0));
  EXPECT_FALSE(blocks_partial(96));
}

TEST(PartialLayout, RoomCoversTheWidestTilingInWholeGroups) {
  EXPECT_EQ(partial_columns(2048), 2112); // 11 tiles of 192
  EXPECT_EQ(partial_columns(4096), 4224); // 22 tiles of 192
  EXPECT_EQ(partial_columns(3072), 3072);
  EXPECT_EQ(partial_columns(2056), 2304); // 9 tiles of 256
  EXPECT_EQ(partial_rows(1), 64);
  EXPECT_EQ(partial_rows(64), 64);
  EXPECT_EQ(partial_rows(65536), 65536);
  EXPECT_EQ(partial_rows(65537), 65600);
}
