/* Tests of the GPU spec table (predict/gpu.c). */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "grape/predict.h"
#include "predict/gpu.h"

Test(predict, gpu_names_resolve_as_nvidia_smi_prints_them) {
  static const char* const names[] = {
      "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H200", "NVIDIA A100-SXM4-40GB",
      "NVIDIA A100-SXM4-80GB", "NVIDIA L4", "NVIDIA L40S", "NVIDIA GeForce RTX 4090",
      "Tesla V100-PCIE-32GB", "Tesla V100-SXM2-16GB", "Tesla T4",
      /* every device JSON of the shared NeuSight data */
      "NVIDIA A100-PCIE-40GB", "NVIDIA A100 80GB PCIe", "Tesla P100-PCIE-16GB", "Tesla P4"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    const grape_gpu_spec_t* g = grape_gpu_find(names[i]);
    cr_assert_not_null(g, "%s", names[i]);
    cr_expect_str_eq(g->name, names[i]);
    cr_expect(g->sm_count > 0 && g->clock_mhz > 0 && g->mem_bw_gbs > 0 && g->l2_mb > 0 &&
                  g->fp32_tflops > 0 && g->regs_per_sm == 65536 && g->smem_per_sm_kb > 0 &&
                  g->max_threads_per_sm >= 1024 && g->max_blocks_per_sm >= 16 &&
                  g->source != NULL,
              "%s", names[i]);
  }
}

Test(predict, gpu_lookup_ignores_case_and_separators) {
  const grape_gpu_spec_t* t4 = grape_gpu_find("Tesla T4");
  cr_assert_not_null(t4);
  cr_expect_eq(grape_gpu_find("tesla_t4"), t4);
  cr_expect_eq(grape_gpu_find("TESLA-T4"), t4);
  cr_expect_eq(grape_gpu_find("t4"), t4);
  cr_expect_eq(grape_gpu_find("nvidia h100 80gb hbm3")->sm_count, 132);
  cr_expect_null(grape_gpu_find("Tesla T5"));
  cr_expect_null(grape_gpu_find(""));
  cr_expect_null(grape_gpu_find(NULL));
}

Test(predict, gpu_json_overrides_and_adds) {
  const grape_gpu_spec_t* g;
  size_t n = grape_gpu_count();
  cr_assert_eq(grape__gpu_parse_json("{\"Device\":\"Tesla T4\",\"Num_Sm\":41,\"Mem_Bw\":300}", &g, NULL, 0),
               0);
  cr_expect_eq(grape_gpu_find("Tesla T4"), g);
  cr_expect_eq(g->sm_count, 41);
  cr_expect_eq(g->mem_bw_gbs, 300);
  cr_expect_eq(g->max_threads_per_sm, 1024, "fields the JSON lacks keep the built-in values");
  cr_expect_eq(grape_gpu_count(), n, "an override does not add a row");
  cr_assert_eq(grape__gpu_parse_json("{\"Device\":\"Foo GPU\",\"Dev_Mem\":8,\"Mem_Bw\":100,"
                                     "\"Num_Sm\":10,\"Core_Per_SM\":64,\"Freq\":1000,"
                                     "\"L2Cache\":2}",
                                     &g, NULL, 0),
               0);
  cr_expect_eq(grape_gpu_count(), n + 1);
  cr_expect_float_eq(g->fp32_tflops, 1.28, 1e-9, "FP32 peak from cores x clock");
  cr_expect_eq(grape_gpu_find("foo gpu"), g);
}

Test(predict, gpu_json_rejects_bad_input) {
  const grape_gpu_spec_t* g;
  cr_expect_eq(grape__gpu_parse_json("{}", &g, NULL, 0), -EINVAL);
  cr_expect_eq(grape__gpu_parse_json("{\"Device\":\"X\"}", &g, NULL, 0), -EINVAL, "no specs");
  cr_expect_eq(grape__gpu_parse_json("{\"Device\":\"Tesla T4\",\"Num_Sm\":-3}", &g, NULL, 0), -EINVAL);
  cr_expect_eq(grape__gpu_parse_json("{\"Device\":\"Tesla T4\",\"Mem_Bw\":\"fast\"}", &g, NULL, 0),
               -EINVAL);
  cr_expect_eq(grape_gpu_load_json("/nonexistent/gpu.json", &g), -ENOENT);
}

/* A damaged device JSON is refused with what is wrong and where (the JSON
 * reader's message, or the field at fault), and adds no GPU (the text
 * scraper before took "Mem_Bw": 3e2x as 300). */
Test(predict, gpu_json_says_what_is_wrong) {
  static const struct {
    const char* text;
    const char* why;
  } bad[] = {
    {"{\"Device\":\"Tesla T4\",\"Mem_Bw\":3e2x}", "expected ',' or '}' at byte 33"},
    {"{\"Device\":\"Tesla T4\",\"Mem_Bw\":-inf}", "malformed number at byte 30"},
    {"{\"Device\":\"Tesla T4\",\"Mem_Bw\":\"fast\"}", "\"Mem_Bw\" is not a positive number"},
    {"{\"Device\":\"Tesla T4\",\"Num_Sm\":0}", "\"Num_Sm\" is not a positive number"},
    {"{\"device\":\"Tesla T4\",\"Mem_Bw\":300}", "no \"Device\" name"},
    {"[{\"Device\":\"Tesla T4\"}]", "not a JSON object"},
    {"{\"Device\":\"Foo GPU\",\"Mem_Bw\":100}", "a new GPU needs"},
    {"{\"Device\":\"Tesla T4\",", "expected a member name at byte 21"},
  };
  size_t n = grape_gpu_count();
  const grape_gpu_spec_t* t4 = grape_gpu_find("Tesla T4");
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    const grape_gpu_spec_t* g = NULL;
    char why[256] = "unset";
    cr_expect_eq(grape__gpu_parse_json(bad[i].text, &g, why, sizeof(why)), -EINVAL, "accepted %s",
                 bad[i].text);
    cr_expect(strstr(why, bad[i].why) != NULL, "%s: '%s' lacks '%s'", bad[i].text, why, bad[i].why);
  }
  cr_expect_eq(grape_gpu_count(), n, "a refused JSON adds no GPU");
  cr_expect_eq(grape_gpu_find("Tesla T4"), t4, "nor overrides one");
  char why[256] = "unset";
  const grape_gpu_spec_t* g;
  cr_expect_eq(grape_gpu_load_json_err("/nonexistent/gpu.json", &g, why, sizeof(why)), -ENOENT);
  cr_expect_str_eq(why, "No such file or directory");
  cr_expect_eq(grape__gpu_parse_json("{\"Device\":\"Tesla T4\",\"Num_Sm\":41}", &g, why, sizeof(why)),
               0);
  cr_expect_str_eq(why, "", "no message on success");
}

Test(predict, gpu_board_power_comes_from_the_datasheets) {
  cr_expect_eq(grape__gpu_tdp_w(grape_gpu_find("T4")), 70);
  cr_expect_eq(grape__gpu_tdp_w(grape_gpu_find("Tesla P4")), 75);
  cr_expect_eq(grape__gpu_tdp_w(grape_gpu_find("NVIDIA A100-PCIE-40GB")), 250);
  cr_expect_eq(grape__gpu_tdp_w(grape_gpu_find("NVIDIA H100 80GB HBM3")), 700);
  for (size_t i = 0; i < grape_gpu_count(); i++) {
    const grape_gpu_spec_t* g = grape_gpu_at(i);
    if (strncmp(g->name, "Foo", 3) != 0)
      cr_expect(grape__gpu_tdp_w(g) > 0, "%s has no board power", g->name);
  }
  const grape_gpu_spec_t* g;
  cr_assert_eq(grape__gpu_parse_json("{\"Device\":\"Bar GPU\",\"Dev_Mem\":8,\"Mem_Bw\":100,"
                                     "\"Num_Sm\":10,\"Core_Per_SM\":64,\"Freq\":1000,"
                                     "\"L2Cache\":2}",
                                     &g, NULL, 0),
               0);
  cr_expect_eq(grape__gpu_tdp_w(g), 0, "unknown for a GPU the table does not have");
}
