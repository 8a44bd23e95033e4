# Conformance tests (CTest label `conformance`), included from tests/CMakeLists.txt:
#   conformance_<suite>: `tierjit onnx-test <shared>/onnx-tests/<suite>` with the expected-failure
#                        list; conformance_models: the shared model zoo against its references.
# Where ${TIERJIT_SHARED_DIR} is absent they skip (exit 77 -> SKIP_RETURN_CODE) with a message,
# unless CI=true, where the absence fails them (tests/conformance/run_if_shared.sh).
# Also gives the tools tests the path of the built binary (tests/tools/cli_test.cc).

if(TARGET tierjit_tools_tests)
  target_compile_definitions(tierjit_tools_tests PRIVATE TIERJIT_CLI_PATH="$<TARGET_FILE:tierjit_bin>")
  add_dependencies(tierjit_tools_tests tierjit_bin)
endif()

set(TIERJIT_CONFORMANCE_DIR ${CMAKE_CURRENT_SOURCE_DIR}/conformance)
set(TIERJIT_EXPECTED_FAILURES ${TIERJIT_CONFORMANCE_DIR}/expected_failures.txt)

foreach(suite node pytorch-converted pytorch-operator simple)
  add_test(NAME conformance_${suite}
           COMMAND bash ${TIERJIT_CONFORMANCE_DIR}/run_if_shared.sh ${TIERJIT_SHARED_DIR}/onnx-tests/${suite}
                   $<TARGET_FILE:tierjit_bin> onnx-test ${TIERJIT_SHARED_DIR}/onnx-tests/${suite}
                   --expected-failures ${TIERJIT_EXPECTED_FAILURES})
  set_tests_properties(conformance_${suite} PROPERTIES LABELS conformance SKIP_RETURN_CODE 77 TIMEOUT 1800)
endforeach()

# The models test: tests/models/models_test.cc, one CTest test per model (the demo model needs
# no shared data and always runs).
add_executable(tierjit_models_test ${CMAKE_CURRENT_SOURCE_DIR}/models/models_test.cc)
tierjit_target_defaults(tierjit_models_test)
target_link_libraries(tierjit_models_test PRIVATE tierjit_cli)
add_test(NAME conformance_models_demo_mlp
         COMMAND tierjit_models_test ${PROJECT_SOURCE_DIR}/models/demo_mlp.onnx ${PROJECT_SOURCE_DIR}/models/demo_ref)
set_tests_properties(conformance_models_demo_mlp PROPERTIES LABELS "conformance;unit" TIMEOUT 300)
foreach(model mlp convnet_small resnet18 mobilenet_v2 bert_tiny lstm_small)
  add_test(NAME conformance_models_${model}
           COMMAND bash ${TIERJIT_CONFORMANCE_DIR}/run_if_shared.sh ${TIERJIT_SHARED_DIR}/models/${model}.onnx
                   $<TARGET_FILE:tierjit_models_test> ${TIERJIT_SHARED_DIR}/models/${model}.onnx
                   ${TIERJIT_SHARED_DIR}/models/ref/${model})
  set_tests_properties(conformance_models_${model} PROPERTIES LABELS conformance SKIP_RETURN_CODE 77 TIMEOUT 900)
endforeach()

# The same suites and models with every region that has a lowering compiled at tier 1, 2 and 3
# (`--tier N`, SessionOptions::mode = kPinnedTier; verify off, so a wrong lowering fails here).
foreach(tier 1 2 3)
  foreach(suite node pytorch-converted pytorch-operator simple)
    add_test(NAME conformance_${suite}_tier${tier}
             COMMAND bash ${TIERJIT_CONFORMANCE_DIR}/run_if_shared.sh ${TIERJIT_SHARED_DIR}/onnx-tests/${suite}
                     $<TARGET_FILE:tierjit_bin> onnx-test ${TIERJIT_SHARED_DIR}/onnx-tests/${suite} --tier ${tier}
                     --expected-failures ${TIERJIT_EXPECTED_FAILURES})
    set_tests_properties(conformance_${suite}_tier${tier} PROPERTIES LABELS conformance SKIP_RETURN_CODE 77 TIMEOUT 1800)
  endforeach()
  foreach(model mlp convnet_small resnet18 mobilenet_v2 bert_tiny lstm_small)
    add_test(NAME conformance_models_${model}_tier${tier}
             COMMAND bash ${TIERJIT_CONFORMANCE_DIR}/run_if_shared.sh ${TIERJIT_SHARED_DIR}/models/${model}.onnx
                     $<TARGET_FILE:tierjit_models_test> ${TIERJIT_SHARED_DIR}/models/${model}.onnx
                     ${TIERJIT_SHARED_DIR}/models/ref/${model} ${tier})
    set_tests_properties(conformance_models_${model}_tier${tier} PROPERTIES LABELS conformance SKIP_RETURN_CODE 77 TIMEOUT 900)
  endforeach()
endforeach()

# The safety net: with --verify every compiled version is checked against tier 0 on its first
# call and discarded on a mismatch, so the node suite must pass at any tier as it does at tier 0.
foreach(tier 1 2)
  add_test(NAME conformance_node_tier${tier}_verify
           COMMAND bash ${TIERJIT_CONFORMANCE_DIR}/run_if_shared.sh ${TIERJIT_SHARED_DIR}/onnx-tests/node
                   $<TARGET_FILE:tierjit_bin> onnx-test ${TIERJIT_SHARED_DIR}/onnx-tests/node --tier ${tier} --verify
                   --expected-failures ${TIERJIT_EXPECTED_FAILURES})
  set_tests_properties(conformance_node_tier${tier}_verify PROPERTIES LABELS conformance SKIP_RETURN_CODE 77 TIMEOUT 1800)
endforeach()
