package io.vmcuda.rewriter;

/**
 * The input cannot be rewritten. The message is one line that names the problem (it is shown to users
 * verbatim by the CLI and sent to clients in a REFUSED reply by the daemon).
 */
public class ElfRewriteException extends Exception {
    private static final long serialVersionUID = 1L;

    public ElfRewriteException(String message) {
        super(printableOneLine(message));
    }

    public ElfRewriteException(String message, Throwable cause) {
        super(printableOneLine(message), cause);
    }

    /** Messages quote names read from the (possibly corrupt) file: escape anything that is not printable. */
    private static String printableOneLine(String message) {
        StringBuilder out = new StringBuilder(message.length());
        message.codePoints().forEach(c -> {
            if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || c == 0xfffd) {
                out.append(String.format("\\x%02x", c & 0xff));
            } else {
                out.appendCodePoint(c);
            }
        });
        return out.toString();
    }
}
