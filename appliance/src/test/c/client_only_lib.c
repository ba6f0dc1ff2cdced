/* A shared library that only the test's "client" has (ClientLibrariesTest): the fake worker built against it
 * (needs_client_lib) cannot start on the appliance until the library has been shipped. */
int vmcfix_client_only_value(void) {
    return 7;
}
