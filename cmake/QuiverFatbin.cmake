# quiver_add_fatbin(): compile kernel sources with quiverc into a fat binary and wrap it in a
# static library that embeds the .qfb and provides the generated header.
#
#   quiver_add_fatbin(<name> SOURCES k/a.cpp [k/b.cpp ...]
#                     [TARGETS ptx spirv cpu | ptx:sm_80,sm_90 ...]   (default: every target)
#                     [NAMESPACE <ns>]                                (default: <name>)
#                     [INCLUDE_DIRS dir ...] [DEFINES NAME=VALUE ...])
#   target_link_libraries(app PRIVATE <name>)   # #include "<name>.h"; <ns>::load(dev), <ns>::<kernel>(...)
#
# Outputs, in ${CMAKE_CURRENT_BINARY_DIR}/quiver_fatbin/<name>/: <name>.qfb, <name>.h,
# <name>_embed.cpp and the depfile <name>.d, through which every header the kernels include is
# a dependency. The target's QUIVER_FATBIN_FILE property holds the .qfb path (to install or
# load it from disk). Works after find_package(quiver) and inside quiver's own build tree,
# where the in-tree `quiverc` target is used, or in a build without it the QUIVER_HOST_QUIVERC
# one (imported as quiver::quiverc by the top-level CMakeLists.txt).
include_guard(GLOBAL)

# Functions keep the policies in effect where they are defined. CMP0116 (3.20) makes Ninja and
# the Makefile generators read the depfile the same way, whatever the caller's policy version.
cmake_policy(PUSH)
cmake_policy(VERSION 3.20...3.28)

function(quiver_add_fatbin name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "NAMESPACE" "SOURCES;TARGETS;INCLUDE_DIRS;DEFINES")
  set(ctx "quiver_add_fatbin(${name})")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${ctx}: unexpected arguments: ${arg_UNPARSED_ARGUMENTS} "
      "(expected SOURCES, TARGETS, NAMESPACE, INCLUDE_DIRS, DEFINES)")
  endif()
  if(NOT name MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "${ctx}: the name must be a C identifier; it names the target, "
      "the generated header and (by default) the C++ namespace")
  endif()
  if(TARGET ${name})
    message(FATAL_ERROR "${ctx}: a target named '${name}' already exists")
  endif()
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "${ctx}: SOURCES is required (the kernel .cpp files)")
  endif()
  set(ns "${name}")
  if(DEFINED arg_NAMESPACE)
    set(ns "${arg_NAMESPACE}")
  endif()
  if(NOT ns MATCHES "^[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*$")
    message(FATAL_ERROR "${ctx}: NAMESPACE '${ns}' is not a C++ namespace name (e.g. myops or app::ops)")
  endif()

  # The in-tree compiler when building quiver itself, else the installed one.
  if(TARGET quiverc)
    set(quiverc quiverc)
  elseif(TARGET quiver::quiverc)
    set(quiverc quiver::quiverc)
  else()
    message(FATAL_ERROR "${ctx}: quiverc is not available: this quiver installation was built "
      "without the compiler (QUIVER_BUILD_COMPILER=OFF), so fat binaries cannot be built with it "
      "(inside quiver's own build, QUIVER_HOST_QUIVERC names a quiverc to use instead)")
  endif()

  set(sources "")
  foreach(src IN LISTS arg_SOURCES)
    cmake_path(ABSOLUTE_PATH src BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" NORMALIZE)
    if(NOT EXISTS "${src}")
      message(FATAL_ERROR "${ctx}: kernel source '${src}' does not exist")
    endif()
    list(APPEND sources "${src}")
  endforeach()

  set(options "")
  foreach(dir IN LISTS arg_INCLUDE_DIRS)
    cmake_path(ABSOLUTE_PATH dir BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" NORMALIZE)
    list(APPEND options -I "${dir}")
  endforeach()
  foreach(def IN LISTS arg_DEFINES)
    list(APPEND options -D "${def}")
  endforeach()
  if(arg_TARGETS)
    # Only the shape is checked here: the names are quiverc's target registry, and quiverc
    # refuses an unknown one naming every target it has.
    foreach(t IN LISTS arg_TARGETS)
      if(NOT t MATCHES "^[a-z0-9_]+(:[A-Za-z0-9_.]+(,[A-Za-z0-9_.]+)*)?$")
        message(FATAL_ERROR "${ctx}: TARGETS entry '${t}' is not a target name optionally followed "
          "by architectures (ptx, ptx:sm_80,sm_90)")
      endif()
    endforeach()
    # quiverc takes one ';'-separated argument; $<SEMICOLON> keeps it one argument.
    list(JOIN arg_TARGETS "$<SEMICOLON>" joined)
    list(APPEND options --targets "${joined}")
  endif()

  set(out "${CMAKE_CURRENT_BINARY_DIR}/quiver_fatbin/${name}")
  file(MAKE_DIRECTORY "${out}")
  set(qfb "${out}/${name}.qfb")
  set(header "${out}/${name}.h")
  set(embed "${out}/${name}_embed.cpp")
  # The .qfb comes first: the depfile names it as its target.
  add_custom_command(
    OUTPUT "${qfb}" "${header}" "${embed}"
    COMMAND ${quiverc} ${sources} -o "${qfb}" --emit-header "${header}" --emit-embed "${embed}"
            --namespace "${ns}" --depfile "${out}/${name}.d" ${options}
    DEPENDS ${sources} ${quiverc}
    DEPFILE "${out}/${name}.d"
    COMMENT "quiverc: building fat binary ${name}.qfb"
    VERBATIM)

  add_library(${name} STATIC "${embed}" "${header}")
  target_include_directories(${name} PUBLIC "$<BUILD_INTERFACE:${out}>")
  target_link_libraries(${name} PUBLIC quiver::runtime)
  target_compile_features(${name} PUBLIC cxx_std_20)
  set_target_properties(${name} PROPERTIES
    POSITION_INDEPENDENT_CODE ON       # so it can be linked into shared libraries too
    QUIVER_FATBIN_FILE "${qfb}"
    QUIVER_FATBIN_HEADER "${header}")
endfunction()

cmake_policy(POP)
