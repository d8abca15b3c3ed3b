// Prints the format's target table (runtime/format/targets.h), one manifest name a line, for
// target_table_test.mjs to compare with the JavaScript reader's.
#include <iostream>

#include "format/targets.h"

int main() {
  for (const quiver::format::TargetInfo& t : quiver::format::targets()) std::cout << t.name << "\n";
  return std::cout ? 0 : 1;
}
