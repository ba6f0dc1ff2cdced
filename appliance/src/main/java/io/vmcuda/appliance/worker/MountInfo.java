package io.vmcuda.appliance.worker;

/** What /proc/self/mountinfo's fields need to be read (proc(5)). */
final class MountInfo {
    private MountInfo() {}

    /** mountinfo writes space, tab, newline and backslash as \040 \011 \012 \134. */
    static String unescape(String s) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\' && i + 3 < s.length() && s.substring(i + 1, i + 4).matches("[0-7]{3}")) {
                b.append((char) Integer.parseInt(s.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }
}
