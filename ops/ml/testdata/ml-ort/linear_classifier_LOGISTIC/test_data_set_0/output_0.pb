
2c2a2c2b2b2b2c2b2b2a2a2b2c2a2c2c2c2b2a2b2b2c2a2b2b2b2c2a2c2bBoutput_0.pb