package io.vmcuda.rewriter;

/**
 * Whether a binary can be rewritten; {@code reason} is a one-line explanation when it cannot
 * (null when it can).
 *
 * <p>The factory for the positive answer is {@link #accepted()}, not {@code ok()}: Java does not allow a
 * static {@code ok()} next to the record accessor {@code ok()}.
 */
public record Admission(boolean ok, String reason) {
    private static final Admission ACCEPTED = new Admission(true, null);

    public static Admission accepted() {
        return ACCEPTED;
    }

    public static Admission refused(String reason) {
        return new Admission(false, reason);
    }
}
