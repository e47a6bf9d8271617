
2nine2other2seven2eightBoutput_0.pb