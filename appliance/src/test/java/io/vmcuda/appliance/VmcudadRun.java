package io.vmcuda.appliance;

import java.io.PrintWriter;
import java.io.StringWriter;
import picocli.CommandLine;

/**
 * What one vmcudad command line did, as its user sees it: the exit status and what it printed. Only for forms
 * that return (errors, --help, the token tools, cache seed): the daemon's own form would run the daemon.
 */
record VmcudadRun(int status, String out, String err) {
    static VmcudadRun of(String... args) {
        StringWriter out = new StringWriter(), err = new StringWriter();
        CommandLine cl = DaemonCommand.commandLine();
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        int status = cl.execute(args);
        return new VmcudadRun(status, out.toString(), err.toString());
    }
}
