
2c2c2c2a2b2b2a2a2b2b2a2b2c2c2b2c2c2c2b2c2b2b2b2b2b2c2c2a2a2cBoutput_0.pb