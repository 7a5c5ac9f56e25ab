// The test executables' main: GoogleTest's, except that a run whose every test skipped and none
// failed exits 77, which ctest reports as skipped (SKIP_RETURN_CODE). A failing test stays failed
// whatever it printed; GoogleTest's own main exits 0 for skipped tests.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  const ::testing::UnitTest& run = *::testing::UnitTest::GetInstance();
  const bool all_skipped = run.test_to_run_count() > 0 && run.skipped_test_count() == run.test_to_run_count();
  return rc == 0 && all_skipped ? 77 : rc;
}
