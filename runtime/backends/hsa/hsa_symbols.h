// Every HSA runtime entry point the backend uses, in one X-macro table:
//   QV_HSA_SYMBOL(return type, name, parameter list)
// The member is named like the exported symbol. Included by hsa_api.h after the HSA types are
// declared; no include guard on purpose.

QV_HSA_SYMBOL(hsa_status_t, hsa_init, ())
QV_HSA_SYMBOL(hsa_status_t, hsa_shut_down, ())
QV_HSA_SYMBOL(hsa_status_t, hsa_status_string, (hsa_status_t status, const char** text))
QV_HSA_SYMBOL(hsa_status_t, hsa_system_get_info, (hsa_system_info_t attribute, void* value))

QV_HSA_SYMBOL(hsa_status_t, hsa_iterate_agents,
              (hsa_status_t (*callback)(hsa_agent_t agent, void* data), void* data))
QV_HSA_SYMBOL(hsa_status_t, hsa_agent_get_info, (hsa_agent_t agent, hsa_agent_info_t attribute, void* value))
QV_HSA_SYMBOL(hsa_status_t, hsa_agent_iterate_regions,
              (hsa_agent_t agent, hsa_status_t (*callback)(hsa_region_t region, void* data), void* data))
QV_HSA_SYMBOL(hsa_status_t, hsa_region_get_info, (hsa_region_t region, hsa_region_info_t attribute, void* value))

QV_HSA_SYMBOL(hsa_status_t, hsa_memory_allocate, (hsa_region_t region, size_t size, void** pointer))
QV_HSA_SYMBOL(hsa_status_t, hsa_memory_free, (void* pointer))
QV_HSA_SYMBOL(hsa_status_t, hsa_memory_copy, (void* dst, const void* src, size_t size))

QV_HSA_SYMBOL(hsa_status_t, hsa_queue_create,
              (hsa_agent_t agent, uint32_t size, uint32_t type,
               void (*callback)(hsa_status_t status, hsa_queue_t* source, void* data), void* data,
               uint32_t private_segment_size, uint32_t group_segment_size, hsa_queue_t** queue))
QV_HSA_SYMBOL(hsa_status_t, hsa_queue_destroy, (hsa_queue_t* queue))
QV_HSA_SYMBOL(uint64_t, hsa_queue_add_write_index_scacq_screl, (const hsa_queue_t* queue, uint64_t value))
QV_HSA_SYMBOL(uint64_t, hsa_queue_load_read_index_scacquire, (const hsa_queue_t* queue))

QV_HSA_SYMBOL(hsa_status_t, hsa_signal_create,
              (hsa_signal_value_t initial_value, uint32_t num_consumers, const hsa_agent_t* consumers,
               hsa_signal_t* signal))
QV_HSA_SYMBOL(hsa_status_t, hsa_signal_destroy, (hsa_signal_t signal))
QV_HSA_SYMBOL(hsa_signal_value_t, hsa_signal_load_scacquire, (hsa_signal_t signal))
QV_HSA_SYMBOL(void, hsa_signal_store_screlease, (hsa_signal_t signal, hsa_signal_value_t value))
QV_HSA_SYMBOL(hsa_signal_value_t, hsa_signal_wait_scacquire,
              (hsa_signal_t signal, hsa_signal_condition_t condition, hsa_signal_value_t compare_value,
               uint64_t timeout_hint, hsa_wait_state_t wait_state_hint))

QV_HSA_SYMBOL(hsa_status_t, hsa_code_object_reader_create_from_memory,
              (const void* code_object, size_t size, hsa_code_object_reader_t* reader))
QV_HSA_SYMBOL(hsa_status_t, hsa_code_object_reader_destroy, (hsa_code_object_reader_t reader))
QV_HSA_SYMBOL(hsa_status_t, hsa_executable_create_alt,
              (hsa_profile_t profile, hsa_default_float_rounding_mode_t rounding_mode, const char* options,
               hsa_executable_t* executable))
QV_HSA_SYMBOL(hsa_status_t, hsa_executable_load_agent_code_object,
              (hsa_executable_t executable, hsa_agent_t agent, hsa_code_object_reader_t reader,
               const char* options, hsa_loaded_code_object_t* loaded))
QV_HSA_SYMBOL(hsa_status_t, hsa_executable_freeze, (hsa_executable_t executable, const char* options))
QV_HSA_SYMBOL(hsa_status_t, hsa_executable_destroy, (hsa_executable_t executable))
QV_HSA_SYMBOL(hsa_status_t, hsa_executable_get_symbol_by_name,
              (hsa_executable_t executable, const char* name, const hsa_agent_t* agent,
               hsa_executable_symbol_t* symbol))
QV_HSA_SYMBOL(hsa_status_t, hsa_executable_symbol_get_info,
              (hsa_executable_symbol_t symbol, hsa_executable_symbol_info_t attribute, void* value))
